// The n8n-free core of n8n-nodes-idempotency: keys, the Postgres store, pools and errors.
export * from './errors';
export * from './identifiers';
export * from './types';
export * from './store';
export * from './keys/canonicalJson';
export * from './keys/deriveKey';
export * from './keys/forbiddenHeaders';
export * from './keys/presets';
export * from './keys/sha256';
export * from './postgres/classifyError';
export * from './postgres/connectionSettings';
export * from './postgres/pool';
export * from './sql/statements';
export * from './sql/migrations';
export * from './postgres/checkConnection';
