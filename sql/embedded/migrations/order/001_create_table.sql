-- n8n-nodes-idempotency embedded store: the Idempotency Order Guard's table, per business object
-- the highest version applied so far (order schema version 1 of the embedded store).
-- version is the exact decimal text the package's parseVersion gives; versions are compared with
-- the package's own comparison (the SQL function idempotency_compare_versions the store registers
-- on its connection), never as floating point numbers. Times: milliseconds since 1970 UTC.
create table if not exists object_versions (
  object_key text primary key not null,
  version text not null,
  event_key text,
  last_decision text not null default 'newer' check (last_decision in ('newer', 'stale')),
  stale_count integer not null default 0,
  first_seen integer not null,
  updated_at integer not null,
  last_seen integer not null,
  execution_id text,
  workflow_id text
) strict;
create index if not exists object_versions_updated_at_idx on object_versions (updated_at);
