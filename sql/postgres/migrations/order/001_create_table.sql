-- n8n-nodes-idempotency: the Idempotency Order Guard's table: per business object, the highest
-- version applied so far. Safe to run more than once. The node runs the same statement when its
-- "Create or Upgrade Table" option is on (default); the default name is object_versions in schema public.
-- version is numeric, so integers of any size (and Unix times with fractions) compare exactly.
create table if not exists object_versions (
  object_key text primary key,
  version numeric not null,
  -- The event (usually its idempotency key) that set the mark: the same event, retried after a
  -- failed run, passes again instead of being stopped by its own mark.
  event_key text,
  -- What the latest delivery was told: 'newer' (it set or kept the mark) or 'stale'.
  last_decision text not null default 'newer' check (last_decision in ('newer', 'stale')),
  stale_count integer not null default 0,
  first_seen timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  last_seen timestamptz not null default now(),
  execution_id text,
  workflow_id text
);
-- Marks are kept until you delete them (a deleted mark lets an older event through again);
-- this index keeps a hand-run cleanup by age cheap.
create index if not exists object_versions_updated_at_idx on object_versions (updated_at);
-- The schema version lives in the table's comment; the nodes read it and run the files after it.
comment on table object_versions is 'n8n-nodes-idempotency order schema version 1';
