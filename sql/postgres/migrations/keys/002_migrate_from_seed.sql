-- Schema version 2. Upgrades the seed recipe's table (key text primary key, first_seen timestamptz)
-- in place. Idempotent: every step is skipped when already done, so it is safe on a table created
-- by 001_create_table.sql too. Existing keys stay duplicates: they become 'completed' rows.
alter table processed_events add column if not exists status text not null default 'completed' check (status in ('processing', 'completed', 'failed'));
alter table processed_events add column if not exists attempts integer not null default 1;
alter table processed_events add column if not exists duplicate_count integer not null default 0;
alter table processed_events add column if not exists last_seen timestamptz not null default now();
alter table processed_events add column if not exists locked_until timestamptz;
alter table processed_events add column if not exists expires_at timestamptz;
alter table processed_events add column if not exists owner_token uuid;
alter table processed_events add column if not exists execution_id text;
alter table processed_events add column if not exists workflow_id text;
alter table processed_events add column if not exists key_source text;
alter table processed_events add column if not exists payload_hash text;
alter table processed_events add column if not exists response jsonb;
alter table processed_events add column if not exists completed_at timestamptz;
alter table processed_events add column if not exists last_error text;
create index if not exists processed_events_first_seen_idx on processed_events (first_seen);
create index if not exists processed_events_expires_at_idx on processed_events (expires_at);
create index if not exists processed_events_execution_idx on processed_events (execution_id) where status = 'processing';
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 2';
