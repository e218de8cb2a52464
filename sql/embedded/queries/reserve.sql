-- Reserves a batch of keys in one statement (what the Idempotency Reserve node sends), the same
-- decisions as the Postgres store's sql/queries/reserve.sql.
-- $batch: a JSON array with one array per distinct key: [key, key source, payload hash, owner token,
--   payload (JSON text) or null, payload size in UTF-8 bytes or null, source or null, correlation id or null].
-- $mode ('lease' | 'permanent'), $lease_ms, $retention_ms, $execution_id, $workflow_id, $instance_id.
--
-- For each key, against the row as it is when this statement runs (it holds the file's write lock):
--   no row                                   -> insert: reserved (new)
--   retention ended (the rule below)         -> counts as absent: reset, reserved again (new, attempts 1)
--   status 'failed'                          -> reserved again (new, attempts + 1)
--   lease ran out (locked_until <= now)      -> reclaimed from a crashed run (new, attempts + 1)
--   lease still valid                        -> in progress (duplicate_count + 1)
--   completed                                -> duplicate (duplicate_count + 1)
-- Retention, the same rule as cleanup.sql: a key is kept until the later of its retention end and
-- its lease end (a row without a lease: its retention end). The retention end is expires_at, set by
-- every reservation to now + $retention_ms; a row without one ends $retention_ms after first_seen.
-- Counters saturate at 2147483647 instead of growing past Postgres's integer.
-- The caller knows a key is its own when the returned owner_token is the one it proposed.
-- Evidence (payload, payload_bytes, source, correlation_id): a duplicate never changes it; a
-- retention end resets it; a take-over keeps the old value of each unless the new delivery gives one.
-- Duplicates are updated too, so the returned row is always the one this statement left.
-- "now" is read once, in the clock CTE: the host's wall clock in whole milliseconds.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
batch as (
  select value ->> 0 as key, value ->> 1 as key_source, value ->> 2 as payload_hash, value ->> 3 as owner_token,
         value ->> 4 as payload, value ->> 5 as payload_bytes, value ->> 6 as source, value ->> 7 as correlation_id
  from json_each($batch)
)
insert into processed_events as e (
  key, first_seen, status, attempts, duplicate_count, last_seen, locked_until, expires_at,
  owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, completed_at,
  payload, payload_bytes, source, correlation_id
)
select
  b.key, c.now, case when $mode = 'lease' then 'processing' else 'completed' end, 1, 0, c.now,
  case when $mode = 'lease' then c.now + $lease_ms end,
  c.now + $retention_ms,
  b.owner_token, $execution_id, $workflow_id, $instance_id, b.key_source, b.payload_hash,
  case when $mode = 'lease' then null else c.now end,
  b.payload, b.payload_bytes, b.source, b.correlation_id
from batch as b, clock as c
-- "where true" tells SQLite's parser that ON CONFLICT below belongs to the insert, not to a join.
where true
on conflict (key) do update set
  -- ended: max(retention end, lease end) <= now; taken over: ended, failed, or the lease ran out.
  -- (SQLite's max() of a null is null, where Postgres's greatest() skips it: no lease counts as 0.)
  first_seen = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.first_seen
    else e.first_seen end,
  attempts = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then 1
    when e.status = 'failed' or e.locked_until <= excluded.last_seen then min(e.attempts, 2147483646) + 1
    else e.attempts end,
  -- A re-send of this statement with the same owner token is not a duplicate.
  duplicate_count = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then 0
    when e.status = 'failed' or e.locked_until <= excluded.last_seen or e.owner_token = excluded.owner_token then e.duplicate_count
    else min(e.duplicate_count, 2147483646) + 1 end,
  last_seen = excluded.last_seen,
  status = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.status else e.status end,
  locked_until = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.locked_until else e.locked_until end,
  expires_at = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.expires_at else e.expires_at end,
  owner_token = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.owner_token else e.owner_token end,
  execution_id = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.execution_id else e.execution_id end,
  workflow_id = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.workflow_id else e.workflow_id end,
  n8n_instance = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.n8n_instance else e.n8n_instance end,
  key_source = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.key_source
    else coalesce(e.key_source, excluded.key_source) end,
  payload_hash = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.payload_hash
    else coalesce(e.payload_hash, excluded.payload_hash) end,
  response = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then null else e.response end,
  completed_at = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then excluded.completed_at else e.completed_at end,
  -- A key taken over has not been completed by its new owner.
  effect_completed_at = case when e.status = 'failed' or e.locked_until <= excluded.last_seen
    or max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
    then null else e.effect_completed_at end,
  last_error = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then null
    else e.last_error end,
  payload = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.payload
    when e.status = 'failed' or e.locked_until <= excluded.last_seen then coalesce(excluded.payload, e.payload)
    else e.payload end,
  -- The size goes with the payload kept; with none kept, the new delivery's size says why.
  payload_bytes = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.payload_bytes
    when (e.status = 'failed' or e.locked_until <= excluded.last_seen) and (excluded.payload is not null or e.payload is null)
      then coalesce(excluded.payload_bytes, e.payload_bytes)
    else e.payload_bytes end,
  source = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.source
    when e.status = 'failed' or e.locked_until <= excluded.last_seen then coalesce(excluded.source, e.source)
    else e.source end,
  correlation_id = case
    when max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen then excluded.correlation_id
    when e.status = 'failed' or e.locked_until <= excluded.last_seen then coalesce(excluded.correlation_id, e.correlation_id)
    else e.correlation_id end
returning key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
  execution_id, workflow_id, key_source, payload_hash, response, completed_at, last_error, owner_token,
  coalesce(locked_until > last_seen, 0) as lease_active;
