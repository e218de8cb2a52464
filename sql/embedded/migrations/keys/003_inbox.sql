-- Keys schema version 3 of the embedded store (version 6 of the Postgres table): the Idempotent
-- Webhook trigger's inbox (see sql/postgres/migrations/keys/006_inbox.sql for what each column
-- means). Times are whole milliseconds since 1970-01-01 UTC, as in the rest of the table. Every
-- column is null on a key that is not an inbox event; existing keys are kept as they are.
-- Run once per table, under the file's write lock, after its version was read (migrations.ts):
-- SQLite has no "add column if not exists".
alter table processed_events add column inbox_owner text;
alter table processed_events add column inbox_item text;
alter table processed_events add column first_retry_ms integer;
alter table processed_events add column max_attempts integer;
alter table processed_events add column retry_until integer;
alter table processed_events add column next_attempt_at integer;
alter table processed_events add column dead_lettered_at integer;
create index if not exists processed_events_inbox_idx on processed_events (inbox_owner)
  where inbox_owner is not null and dead_lettered_at is null and status <> 'completed';
