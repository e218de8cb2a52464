-- Marks reservations completed, optionally storing the response a later duplicate can replay.
-- $1 keys text[], $2 owner tokens uuid[], $3 responses jsonb[] (null keeps the stored one).
-- Guarded by the owner token: a run whose lease was taken over matches no row and is told so.
-- effect_completed_at records that the owner completed it (kept from the first Complete when one
-- is re-sent): Release and Mark Failed then refuse the key. An inbox event keeps nothing to run
-- again: its kept item, retry due and dead-letter mark are cleared (its owner stays, so every later
-- delivery is still a duplicate).
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a settle and a redelivered batch of the same keys never
-- deadlock; the update then changes only rows this statement holds.
with mine as (
  select e.key, b.owner_token, b.response
  from processed_events as e
  join unnest($1::text[], $2::uuid[], $3::jsonb[]) as b(key, owner_token, response) on b.key = e.key
  where e.owner_token = b.owner_token and e.status <> 'failed'
  order by e.key collate "C"
  for update of e
)
update processed_events as e set
  status = 'completed',
  completed_at = now(),
  effect_completed_at = coalesce(e.effect_completed_at, now()),
  locked_until = null,
  response = coalesce(m.response, e.response),
  inbox_item = null,
  next_attempt_at = null,
  dead_lettered_at = null
from mine as m
where e.key = m.key and e.owner_token = m.owner_token and e.status <> 'failed'
returning e.key, e.owner_token, e.status, e.completed_at, e.response;
