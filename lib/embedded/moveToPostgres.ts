// The path docs/moving-to-postgres.md gives script users (dist/lib/embedded/moveToPostgres.js).
export * from '../store/embedded/moveToPostgres';
