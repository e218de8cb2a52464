-- Claim Due Inbox: takes up to $2 of one inbox owner's events that are due for their next run, in
-- one statement (what the Idempotent Webhook trigger's retry runner sends). $1 owner, $2 most events,
-- $3 lease in milliseconds, $4 retention in seconds or null (each key kept at least this long from
-- now; null: as it is), $5 proposed owner tokens uuid[] (as many as $2), $6 n8n instance id or null
-- (null: the key's is kept).
--
-- Due, among the owner's events still to run (not completed, not dead-lettered):
--   status 'failed', next_attempt_at <= now()    -> its retry is due
--   status 'processing', locked_until <= now()   -> its run died, or its execution never started
-- A due event is claimed: a new owner token, processing, the lease, attempts + 1, no retry due, its
-- execution cleared (the claimer records the new one). Unless it already had its last run
-- (attempts >= max_attempts) or fell due after its retry window (the time it fell due, not now: a
-- retry due while n8n was down still runs when n8n is back): then it is dead-lettered instead
-- (failed, kept with its item) and not returned.
-- The rows are taken FOR UPDATE SKIP LOCKED, the longest due first: concurrent claimers (other
-- processes, other n8n mains) each take rows no other one holds, and none waits for another.
-- Both reads name the predicate of the partial index processed_events_inbox_idx, which holds
-- exactly the events still to run: a look for due retries never reads the rest of the table.
-- A re-send of this statement after its answer was lost (the same tokens) returns the events the
-- first one claimed, and claims no others.
with already as (
  select e.key from processed_events as e
  where e.inbox_owner = $1 and e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed'
    and e.owner_token = any($5::uuid[])
),
due as (
  select e.key,
         case when e.status = 'failed' then e.next_attempt_at else e.locked_until end as due_at,
         e.attempts >= e.max_attempts
           or case when e.status = 'failed' then e.next_attempt_at else e.locked_until end > e.retry_until
           or e.inbox_item is null as exhausted
  from processed_events as e
  where e.inbox_owner = $1 and e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed'
    and ((e.status = 'failed' and e.next_attempt_at <= now()) or (e.status = 'processing' and e.locked_until <= now()))
    and not exists (select 1 from already)
  order by 2, e.key collate "C"
  limit $2
  for update of e skip locked
),
numbered as (
  select key, exhausted, row_number() over (order by due_at, key collate "C") as position from due
),
tokens as (
  select token, position from unnest($5::uuid[]) with ordinality as t(token, position)
),
changed as (
  update processed_events as e set
    status = case when n.exhausted then 'failed' else 'processing' end,
    owner_token = case when n.exhausted then e.owner_token else t.token end,
    locked_until = case when n.exhausted then null else now() + $3::bigint * interval '1 millisecond' end,
    attempts = case when n.exhausted then e.attempts else least(e.attempts, 2147483646) + 1 end,
    next_attempt_at = null,
    dead_lettered_at = case when n.exhausted then now() end,
    last_error = case when e.status = 'processing' then 'Its run ended without settling the key: its lease ran out.' else e.last_error end,
    execution_id = case when n.exhausted then e.execution_id end,
    n8n_instance = case when n.exhausted then e.n8n_instance else coalesce($6::text, e.n8n_instance) end,
    expires_at = case when n.exhausted or $4::double precision is null then e.expires_at
      else greatest(e.expires_at, now() + make_interval(secs => $4::double precision)) end
  from numbered as n
  join tokens as t using (position)
  where e.key = n.key
  returning e.key, e.owner_token, e.locked_until, e.inbox_item, e.attempts, e.status
)
select key, owner_token, locked_until, inbox_item, attempts, true as claimed from changed where status = 'processing'
union all
select e.key, e.owner_token, e.locked_until, e.inbox_item, e.attempts, true from processed_events as e join already using (key);
