-- Holds owned reservations while their execution waits (a Wait node): each lease is extended to
-- its hold from now, never shortened, so a copy delivered during the wait is In Progress instead of
-- taking the key over and running the business step a second time.
-- $1 keys text[], $2 owner tokens uuid[], $3 holds in milliseconds bigint[].
-- Only a processing row of the same owner is held: a key settled or taken over is left as it is.
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a hold and a redelivered batch of the same keys never
-- deadlock; the update then changes only rows this statement holds.
with mine as (
  select e.key, b.owner_token, b.hold_ms
  from processed_events as e
  join unnest($1::text[], $2::uuid[], $3::bigint[]) as b(key, owner_token, hold_ms) on b.key = e.key
  where e.owner_token = b.owner_token and e.status = 'processing'
  order by e.key collate "C"
  for update of e
)
update processed_events as e set
  locked_until = greatest(e.locked_until, now() + m.hold_ms * interval '1 millisecond')
from mine as m
where e.key = m.key and e.owner_token = m.owner_token and e.status = 'processing'
returning e.key, e.locked_until;
