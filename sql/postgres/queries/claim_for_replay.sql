-- Claim for Replay: takes over stored keys so a replay can run their business step again, in one
-- statement for a batch. $1 keys text[], $2 owner tokens uuid[] (one per key), $3 lease seconds,
-- $4 retention seconds, $5 n8n execution id, $6 workflow id, $7 n8n instance id.
--
-- For each key, against the row as it is once this statement holds its lock (the latest committed
-- version: a replay or a redelivery that committed first is seen):
--   status 'failed'                                       -> claimed: attempts + 1
--   status 'processing', lease ran out (locked_until <= now()) -> claimed from a dead run: attempts + 1
--   status 'processing', lease still running (or none)    -> not claimed: in_progress
--   status 'completed'                                    -> not claimed: completed
--   no row                                                -> not claimed (absent from the answer)
-- Claimed is what Idempotency Reserve does when it takes a key over (same condition as its
-- taken_over, without the retention reset): a new owner token and lease, so Complete, Mark Failed
-- and Release work as after a reservation, and the replay and a real redelivery can never both
-- own the key. The stored payload, source and correlation id are kept; it is what is replayed.
-- A dead-lettered inbox event is failed, so it is claimed: its dead-letter mark and any retry due
-- are cleared (the replay's run owns it now), and its kept item comes back with the claim. Its
-- attempts go on counting: a replay that fails again dead-letters it again (fail.sql).
-- Rows are locked in the keys' byte order (collate "C"), the order reserve.sql takes them in, so
-- a claim never deadlocks another claim or a reservation of the same keys.
with batch as (
  select distinct on (key) key, owner_token
  from unnest($1::text[], $2::uuid[]) with ordinality as b(key, owner_token, position)
  order by key, position
),
-- The latest committed version of each row, locked until this statement's transaction ends.
current as (
  select e.key, e.status, e.attempts, e.duplicate_count, e.first_seen, e.last_seen, e.locked_until, e.expires_at,
         e.execution_id, e.workflow_id, e.key_source, e.response, e.completed_at, e.last_error,
         e.payload, e.source, e.correlation_id, e.inbox_item,
         e.status = 'failed' or (e.status = 'processing' and e.locked_until <= now()) as replayable,
         -- Ours already: a re-send of this statement (same tokens) after its answer was lost.
         e.owner_token = b.owner_token as ours
  from processed_events as e
  join batch as b on b.key = e.key
  order by e.key collate "C"
  for update of e
),
claimed as (
  update processed_events as e set
    status = 'processing',
    owner_token = b.owner_token,
    locked_until = now() + make_interval(secs => $3::double precision),
    expires_at = now() + make_interval(secs => $4::double precision),
    attempts = least(e.attempts, 2147483646) + 1,
    last_seen = now(),
    execution_id = $5::text,
    workflow_id = $6::text,
    n8n_instance = $7::text,
    response = null,
    completed_at = null,
    effect_completed_at = null,
    next_attempt_at = null,
    dead_lettered_at = null
  from batch as b, current as c
  -- Only on current's word: current read the row as committed once it held its lock, which it keeps
  -- until this transaction ends. A condition on e here would be judged on the statement's snapshot,
  -- older than that lock when the owner marked the key failed meanwhile: the key would be left
  -- unclaimed and answered in progress.
  where e.key = b.key and c.key = b.key and c.replayable
  returning e.key, e.status, e.attempts, e.duplicate_count, e.first_seen, e.last_seen, e.locked_until, e.expires_at,
            e.execution_id, e.workflow_id, e.key_source, e.response, e.completed_at, e.last_error,
            e.payload, e.source, e.correlation_id, e.owner_token, e.inbox_item
)
-- Every sub-statement sees the same snapshot: claimed rows come from the update's answer, the
-- others from the locked versions. Another run's owner token is never returned.
-- The payload comes as text, as in get_keys.sql: its numbers are read exactly from it.
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, response, completed_at, last_error,
       payload::text as payload, payload is not null as payload_stored, source, correlation_id, owner_token, true as claimed, true as lease_active,
       inbox_item
from claimed
union all
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, response, completed_at, last_error,
       payload::text, payload is not null, source, correlation_id,
       case when ours then b.owner_token end, coalesce(ours, false), coalesce(locked_until > now(), false),
       case when ours then inbox_item end
from current as k
join batch as b using (key)
where not exists (select 1 from claimed as c where c.key = k.key);
