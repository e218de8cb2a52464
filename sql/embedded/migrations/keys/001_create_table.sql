-- n8n-nodes-idempotency embedded store: the table that remembers idempotency keys (keys schema
-- version 1 of the embedded store; the same columns as version 4 of the Postgres table, whose
-- version 5 changes no column).
-- Times are whole milliseconds since 1970-01-01 UTC read from the host's clock inside each
-- statement (unixepoch('subsec')); the store hands them out as Date objects.
-- response and payload hold JSON text exactly as it was stored.
create table if not exists processed_events (
  key text primary key not null,
  first_seen integer not null,
  status text not null check (status in ('processing', 'completed', 'failed')),
  attempts integer not null default 1,
  duplicate_count integer not null default 0,
  last_seen integer not null,
  locked_until integer,
  expires_at integer,
  owner_token text,
  execution_id text,
  workflow_id text,
  n8n_instance text,
  key_source text,
  payload_hash text,
  response text,
  completed_at integer,
  effect_completed_at integer,
  last_error text,
  payload text,
  payload_bytes integer,
  source text,
  correlation_id text
) strict;
-- Cleanup finds keys whose retention ended through these instead of scanning the table. Every
-- reservation sets expires_at; only a row inserted by hand may lack it (then first_seen counts).
create index if not exists processed_events_expires_at_idx on processed_events (expires_at);
create index if not exists processed_events_first_seen_idx on processed_events (first_seen) where expires_at is null;
-- Release and Mark Failed by failed execution look up live reservations by execution.
create index if not exists processed_events_execution_idx on processed_events (execution_id) where status = 'processing';
