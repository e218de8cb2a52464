-- Reserves a batch of keys in one statement (what the Idempotency Reserve node sends).
-- $1 keys text[], $2 key sources text[], $3 payload hashes text[], $4 owner tokens uuid[] (one per key),
-- $5 mode ('lease' | 'permanent'), $6 lease seconds, $7 retention seconds, $8 n8n execution id, $9 workflow id,
-- replay evidence, one per key, null when not stored: $10 payloads (JSON text) text[], $11 payload sizes
-- (UTF-8 bytes, also when over the cap and not stored) integer[], $12 sources text[], $13 correlation ids text[].
-- $14 n8n instance id.
-- Inbox events, one per key, null for a key that is not one: $15 owners text[], $16 items (JSON text)
-- text[], $17 most attempts integer[], $18 retry windows in milliseconds bigint[], $19 first retry
-- delays in milliseconds integer[].
-- $3, $10-$13 and $15-$19 may be one null instead of an array of nulls: unnest pads a missing array with nulls.
--
-- For each key, against the row as it is when this statement gets its lock:
--   no row                                   -> insert: reserved (new)
--   retention ended (the rule below)         -> counts as absent: reset, reserved again (new, attempts 1)
--   status 'failed'                          -> reserved again (new, attempts + 1)
--   lease ran out (locked_until <= now())    -> reclaimed from a crashed run (new, attempts + 1)
--   lease still valid                        -> in progress (duplicate_count + 1)
--   completed                                -> duplicate (duplicate_count + 1)
--   an inbox event (inbox_owner set)         -> duplicate whatever its state (duplicate_count + 1): only its
--                                               inbox runs it again (claim_due_inbox.sql); the caller
--                                               answers it so (lib/store/rules.ts reservationResult)
-- Retention, the same rule as cleanup.sql: a key is kept until the later of its retention end and
-- its lease end. The retention end is expires_at, which every reservation (new, retry, reclaim)
-- sets to now + $7; a row without one (the hand-built recipe's, or inserted by hand) ends $7 after
-- first_seen. An inbox event still to run (not completed, not dead-lettered) has no retention end:
-- its kept item is the only copy of the event. Counters saturate at 2147483647 (the integer maximum)
-- instead of failing every later delivery of the key.
-- The caller knows a key is its own when the returned owner_token is the one it proposed.
-- Evidence (payload, payload_bytes, source, correlation_id): a duplicate never changes it, so the
-- first delivery's evidence is kept. A retention end resets it like the rest of the row (the key
-- counts as absent). A take-over (failed, lease ran out) keeps the old value of each unless the new
-- delivery gives one: a retry of the same event usually carries the same body, and a replay must
-- never lose the only copy of it; the correlation id then names the run that owns the key now.
-- Duplicates are updated too (not DO NOTHING) so that the returned row is always the latest one,
-- even when a concurrent transaction inserted it after this statement's snapshot.
-- Lock order: rows are inserted (and existing ones locked) in the keys' byte order, collate "C",
-- whatever the database's collation, as in claim_for_replay.sql, so two reservations, or a
-- reservation and a replay claim, over the same keys never deadlock. "C" also sorts fastest (no locale rules), and the one sort serves both the
-- repeats (the first of each key wins) and the insert.
with batch as (
  select distinct on (key) key, key_source, payload_hash, owner_token, payload::jsonb as payload, payload_bytes, source, correlation_id,
         inbox_owner, inbox_item, max_attempts, retry_for_ms, first_retry_ms
  from unnest($1::text[] collate "C", $2::text[], $3::text[], $4::uuid[], $10::text[], $11::integer[], $12::text[], $13::text[],
              $15::text[], $16::text[], $17::integer[], $18::bigint[], $19::integer[])
    with ordinality as b(key, key_source, payload_hash, owner_token, payload, payload_bytes, source, correlation_id,
                         inbox_owner, inbox_item, max_attempts, retry_for_ms, first_retry_ms, position)
  order by key, position
)
insert into processed_events as e (
  key, first_seen, status, attempts, duplicate_count, last_seen, locked_until, expires_at,
  owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, completed_at,
  payload, payload_bytes, source, correlation_id,
  inbox_owner, inbox_item, max_attempts, first_retry_ms, retry_until
)
select
  key, now(), case when $5 = 'lease' then 'processing' else 'completed' end, 1, 0, now(),
  case when $5 = 'lease' then now() + make_interval(secs => $6::double precision) end,
  now() + make_interval(secs => $7::double precision),
  owner_token, $8::text, $9::text, $14::text, key_source, payload_hash,
  case when $5 = 'lease' then null else now() end,
  payload, payload_bytes, source, correlation_id,
  inbox_owner, inbox_item, max_attempts, first_retry_ms,
  case when inbox_owner is not null then now() + retry_for_ms * interval '1 millisecond' end
from batch
order by key
on conflict (key) do update set
  (first_seen, attempts, duplicate_count, last_seen, status, locked_until, expires_at, owner_token,
   execution_id, workflow_id, n8n_instance, key_source, payload_hash, response, completed_at, effect_completed_at, last_error,
   payload, payload_bytes, source, correlation_id,
   inbox_owner, inbox_item, max_attempts, first_retry_ms, retry_until, next_attempt_at, dead_lettered_at) = (
    select
      case when r.ended then now() else e.first_seen end,
      case when r.ended then 1 when r.taken_over then least(e.attempts, 2147483646) + 1 else e.attempts end,
      -- A re-send of this statement after a lost answer carries the same owner token: not a duplicate.
      case when r.ended then 0 when r.taken_over or e.owner_token = excluded.owner_token then e.duplicate_count else least(e.duplicate_count, 2147483646) + 1 end,
      now(),
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
      select retention.ended,
             retention.ended or (e.inbox_owner is null and (e.status = 'failed' or e.locked_until <= now())) as taken_over
      from (
        -- The retention rule, as in cleanup.sql.
        select greatest(coalesce(e.expires_at, e.first_seen + make_interval(secs => $7::double precision)), e.locked_until) <= now()
          and not (e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed') as ended
      ) as retention
    ) as r
  )
-- The node's Output option picks the columns: Full returns every one; Compact (the default) leaves
-- out the lines between the two <full-record> markers, so Postgres sends and pg parses only what
-- routing and settling need (lib/store/postgres/statements.ts cuts them; run as it is, this is the full one).
returning
  -- <full-record>
  e.duplicate_count, e.first_seen, e.last_seen, e.expires_at, e.execution_id, e.workflow_id, e.key_source,
  e.completed_at, e.last_error, e.effect_completed_at is not null as effect_completed,
  -- </full-record>
  e.key, e.status, e.attempts, e.owner_token, e.payload_hash, e.response, e.locked_until,
  coalesce(e.locked_until > now(), false) as lease_active, e.inbox_owner is not null as inbox;
