-- Marks reservations failed, keeping the row and the error message for inspection;
-- the next delivery of the key reserves it again (attempts + 1).
-- $1 keys text[], $2 owner tokens uuid[], $3 error messages text[].
-- A key its owner completed (effect_completed_at set) is never marked failed: its business step
-- ran, and a failed key would let the next delivery (or a replay) run it again.
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a settle and a redelivered batch of the same keys never
-- deadlock; the update then changes only rows this statement holds.
with mine as (
  select e.key, b.owner_token, b.last_error
  from processed_events as e
  join unnest($1::text[], $2::uuid[], $3::text[]) as b(key, owner_token, last_error) on b.key = e.key
  where e.owner_token = b.owner_token and e.effect_completed_at is null
  order by e.key collate "C"
  for update of e
)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = m.last_error
from mine as m
where e.key = m.key and e.owner_token = m.owner_token and e.effect_completed_at is null
  and $4::float8[] is not null and $5::bigint is not null -- STUB
returning e.key, e.owner_token;
