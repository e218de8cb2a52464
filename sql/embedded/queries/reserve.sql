-- Reserves a batch of keys in one statement (what the Idempotency Reserve node sends), the same
-- decisions as the Postgres store's sql/postgres/queries/reserve.sql.
-- $batch: a JSON array with one array per distinct key: [key, key source, payload hash, owner token,
--   payload (JSON text) or null, payload size in UTF-8 bytes or null, source or null, correlation id or null,
--   then for an inbox event: its owner, item (JSON text), most attempts, retry window in milliseconds,
--   first retry delay in milliseconds (absent: not an inbox event)].
-- $mode ('lease' | 'permanent'), $lease_ms, $retention_ms, $execution_id, $workflow_id, $instance_id.
--
-- For each key, against the row as it is when this statement runs (it holds the file's write lock):
--   no row                                   -> insert: reserved (new)
--   retention ended (the rule below)         -> counts as absent: reset, reserved again (new, attempts 1)
--   status 'failed'                          -> reserved again (new, attempts + 1)
--   lease ran out (locked_until <= now)      -> reclaimed from a crashed run (new, attempts + 1)
--   lease still valid                        -> in progress (duplicate_count + 1)
--   completed                                -> duplicate (duplicate_count + 1)
--   an inbox event (inbox_owner set)         -> duplicate whatever its state (duplicate_count + 1): only its
--                                               inbox runs it again (claim_due_inbox.sql)
-- Retention, the same rule as cleanup.sql: a key is kept until the later of its retention end and
-- its lease end (a row without a lease: its retention end). The retention end is expires_at, set by
-- every reservation to now + $retention_ms; a row without one ends $retention_ms after first_seen.
-- An inbox event still to run (not completed, not dead-lettered) has no retention end.
-- Counters saturate at 2147483647 instead of growing past Postgres's integer.
-- The caller knows a key is its own when the returned owner_token is the one it proposed.
-- Evidence (payload, payload_bytes, source, correlation_id): a duplicate never changes it; a
-- retention end resets it; a take-over keeps the old value of each unless the new delivery gives one.
-- Duplicates are updated too, so the returned row is always the one this statement left.
-- "now" is read once, in the clock CTE: the host's wall clock in whole milliseconds.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
batch as (
  select value ->> 0 as key, value ->> 1 as key_source, value ->> 2 as payload_hash, value ->> 3 as owner_token,
         value ->> 4 as payload, value ->> 5 as payload_bytes, value ->> 6 as source, value ->> 7 as correlation_id,
         value ->> 8 as inbox_owner, value ->> 9 as inbox_item, value ->> 10 as max_attempts,
         value ->> 11 as retry_for_ms, value ->> 12 as first_retry_ms
  from json_each($batch)
)
insert into processed_events as e (
  key, first_seen, status, attempts, duplicate_count, last_seen, locked_until, expires_at,
  owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, completed_at,
  payload, payload_bytes, source, correlation_id,
  inbox_owner, inbox_item, max_attempts, first_retry_ms, retry_until
)
select
  b.key, c.now, case when $mode = 'lease' then 'processing' else 'completed' end, 1, 0, c.now,
  case when $mode = 'lease' then c.now + $lease_ms end,
  c.now + $retention_ms,
  b.owner_token, $execution_id, $workflow_id, $instance_id, b.key_source, b.payload_hash,
  case when $mode = 'lease' then null else c.now end,
  b.payload, b.payload_bytes, b.source, b.correlation_id,
  b.inbox_owner, b.inbox_item, b.max_attempts, b.first_retry_ms,
  case when b.inbox_owner is not null then c.now + b.retry_for_ms end
from batch as b, clock as c
-- "where true" tells SQLite's parser that ON CONFLICT below belongs to the insert, not to a join.
where true
on conflict (key) do update set
  (first_seen, attempts, duplicate_count, last_seen, status, locked_until, expires_at, owner_token,
   execution_id, workflow_id, n8n_instance, key_source, payload_hash, response, completed_at, effect_completed_at, last_error,
   payload, payload_bytes, source, correlation_id,
   inbox_owner, inbox_item, max_attempts, first_retry_ms, retry_until, next_attempt_at, dead_lettered_at) = (
    select
      case when r.ended then excluded.first_seen else e.first_seen end,
      case when r.ended then 1 when r.taken_over then min(e.attempts, 2147483646) + 1 else e.attempts end,
      -- A re-send of this statement with the same owner token is not a duplicate.
      case when r.ended then 0 when r.taken_over or e.owner_token = excluded.owner_token then e.duplicate_count else min(e.duplicate_count, 2147483646) + 1 end,
      excluded.last_seen,
      case when r.taken_over then excluded.status else e.status end,
      case when r.taken_over then excluded.locked_until else e.locked_until end,
      case when r.taken_over then excluded.expires_at else e.expires_at end,
      case when r.taken_over then excluded.owner_token else e.owner_token end,
      case when r.taken_over then excluded.execution_id else e.execution_id end,
      case when r.taken_over then excluded.workflow_id else e.workflow_id end,
      case when r.taken_over then excluded.n8n_instance else e.n8n_instance end,
      case when r.ended then excluded.key_source else coalesce(e.key_source, excluded.key_source) end,
      case when r.ended then excluded.payload_hash else coalesce(e.payload_hash, excluded.payload_hash) end,
      case when r.taken_over then null else e.response end,
      case when r.taken_over then excluded.completed_at else e.completed_at end,
      -- A key taken over has not been completed by its new owner.
      case when r.taken_over then null else e.effect_completed_at end,
      case when r.ended then null else e.last_error end,
      case when r.ended then excluded.payload when r.taken_over then coalesce(excluded.payload, e.payload) else e.payload end,
      -- The size goes with the payload kept; with none kept, the new delivery's size says why.
      case when r.ended then excluded.payload_bytes
        when r.taken_over and (excluded.payload is not null or e.payload is null) then coalesce(excluded.payload_bytes, e.payload_bytes)
        else e.payload_bytes end,
      case when r.ended then excluded.source when r.taken_over then coalesce(excluded.source, e.source) else e.source end,
      case when r.ended then excluded.correlation_id when r.taken_over then coalesce(excluded.correlation_id, e.correlation_id) else e.correlation_id end,
      -- A key taken over is this request's: an inbox event when it gives one, with nothing due yet.
      case when r.taken_over then excluded.inbox_owner else e.inbox_owner end,
      case when r.taken_over then excluded.inbox_item else e.inbox_item end,
      case when r.taken_over then excluded.max_attempts else e.max_attempts end,
      case when r.taken_over then excluded.first_retry_ms else e.first_retry_ms end,
      case when r.taken_over then excluded.retry_until else e.retry_until end,
      case when r.taken_over then null else e.next_attempt_at end,
      case when r.taken_over then null else e.dead_lettered_at end
    from (
      -- excluded.last_seen is this statement's "now". ended: the retention rule (as in cleanup.sql);
      -- taken_over: ended, or (not an inbox event) failed or the lease ran out.
      select retention.ended,
             retention.ended or (e.inbox_owner is null and (e.status = 'failed' or e.locked_until <= excluded.last_seen)) as taken_over
      from (
        -- SQLite's max() of a null is null, where Postgres's greatest() skips it: no lease counts as 0.
        select max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= excluded.last_seen
          and not (e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed') as ended
      ) as retention
    ) as r
  )
-- The node's Output option picks the columns: Full returns every one; Compact (the default) leaves
-- out the lines between the two <full-record> markers (lib/embedded/statements.ts cuts them).
returning
  -- <full-record>
  duplicate_count, first_seen, expires_at, execution_id, workflow_id, key_source, completed_at, last_error, last_seen,
  effect_completed_at is not null as effect_completed,
  -- </full-record>
  key, status, attempts, owner_token, payload_hash, response, locked_until,
  coalesce(locked_until > last_seen, 0) as lease_active, inbox_owner is not null as inbox;
