-- Reserves a batch of keys in one statement (what the Idempotency Reserve node sends).
-- $1 keys text[], $2 key sources text[], $3 payload hashes text[], $4 owner tokens uuid[] (one per key),
-- $5 mode ('lease' | 'permanent'), $6 lease seconds, $7 retention seconds, $8 n8n execution id, $9 workflow id.
--
-- For each key, against the row as it is when this statement gets its lock:
--   no row                                   -> insert: reserved (new)
--   retention ended (expires_at <= now())    -> counts as absent: reset, reserved again (new, attempts 1)
--   status 'failed'                          -> reserved again (new, attempts + 1)
--   lease ran out (locked_until <= now())    -> reclaimed from a crashed run (new, attempts + 1)
--   lease still valid                        -> in progress (duplicate_count + 1)
--   completed                                -> duplicate (duplicate_count + 1)
-- The caller knows a key is its own when the returned owner_token is the one it proposed.
-- Duplicates are updated too (not DO NOTHING) so that the returned row is always the latest one,
-- even when a concurrent transaction inserted it after this statement's snapshot.
with batch as (
  select distinct on (key) key, key_source, payload_hash, owner_token
  from unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) with ordinality as b(key, key_source, payload_hash, owner_token, position)
  order by key, position
)
insert into processed_events as e (
  key, first_seen, status, attempts, duplicate_count, last_seen, locked_until, expires_at,
  owner_token, execution_id, workflow_id, key_source, payload_hash, completed_at
)
select
  key, now(), case when $5 = 'lease' then 'processing' else 'completed' end, 1, 0, now(),
  case when $5 = 'lease' then now() + make_interval(secs => $6::double precision) end,
  now() + make_interval(secs => $7::double precision),
  owner_token, $8::text, $9::text, key_source, payload_hash,
  case when $5 = 'lease' then null else now() end
from batch
order by key
on conflict (key) do update set
  first_seen = case when e.expires_at <= now() then now() else e.first_seen end,
  attempts = case
    when e.expires_at <= now() then 1
    when e.status = 'failed' or e.locked_until <= now() then e.attempts + 1
    else e.attempts end,
  duplicate_count = case
    when e.expires_at <= now() then 0
    when e.status = 'failed' or e.locked_until <= now() then e.duplicate_count
    else e.duplicate_count + 1 end,
  last_seen = now(),
  status = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.status else e.status end,
  locked_until = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.locked_until else e.locked_until end,
  expires_at = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.expires_at else e.expires_at end,
  owner_token = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.owner_token else e.owner_token end,
  execution_id = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.execution_id else e.execution_id end,
  workflow_id = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.workflow_id else e.workflow_id end,
  key_source = case when e.expires_at <= now() then excluded.key_source else coalesce(e.key_source, excluded.key_source) end,
  payload_hash = case when e.expires_at <= now() then excluded.payload_hash else coalesce(e.payload_hash, excluded.payload_hash) end,
  response = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then null else e.response end,
  completed_at = case when e.expires_at <= now() or e.status = 'failed' or e.locked_until <= now() then excluded.completed_at else e.completed_at end,
  last_error = case when e.expires_at <= now() then null else e.last_error end
returning
  e.key, e.status, e.attempts, e.duplicate_count, e.first_seen, e.last_seen, e.locked_until, e.expires_at,
  e.owner_token, e.execution_id, e.workflow_id, e.key_source, e.payload_hash, e.response, e.completed_at,
  e.last_error, coalesce(e.locked_until > now(), false) as lease_active;
