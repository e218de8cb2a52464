-- n8n-nodes-idempotency: the table that remembers idempotency keys (schema version 1).
-- Safe to run more than once. The nodes run the files of sql/postgres/migrations/keys/ in order on first use
-- ("Create or Upgrade Table", on by default); the default name is processed_events in schema public
-- (both are node options). The first two columns are the hand-built seed recipe's table, so an
-- existing installation upgrades in place with the next file, 002_migrate_from_seed.sql.
create table if not exists processed_events (
  key text primary key,
  first_seen timestamptz not null default now(),
  status text not null default 'completed' check (status in ('processing', 'completed', 'failed')),
  attempts integer not null default 1,
  duplicate_count integer not null default 0,
  last_seen timestamptz not null default now(),
  locked_until timestamptz,
  expires_at timestamptz,
  owner_token uuid,
  execution_id text,
  workflow_id text,
  key_source text,
  payload_hash text,
  response jsonb,
  completed_at timestamptz,
  last_error text
);
-- Cleanup finds keys whose retention ended through these instead of scanning the table.
create index if not exists processed_events_first_seen_idx on processed_events (first_seen);
create index if not exists processed_events_expires_at_idx on processed_events (expires_at);
-- Release by failed execution (Error Trigger workflows) looks up live reservations by execution.
create index if not exists processed_events_execution_idx on processed_events (execution_id) where status = 'processing';
-- The schema version lives in the table's comment; the nodes read it and run the files after it.
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 1';
