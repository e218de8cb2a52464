-- Release on error: deletes reservations so the provider's next delivery is processed.
-- $1 keys text[], $2 owner tokens uuid[]. By hand, for one key (the seed's error path):
--   delete from processed_events where key = '<key>';
-- A key its owner completed (effect_completed_at set) is never deleted: its business step ran, and
-- the next delivery would run it again. A Permanent-mode reservation (completed when reserved, not
-- by Complete) is released as the recipe's error path does.
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a settle and a redelivered batch of the same keys never
-- deadlock; the update then changes only rows this statement holds.
with mine as (
  select e.key, b.owner_token
  from processed_events as e
  join unnest($1::text[], $2::uuid[]) as b(key, owner_token) on b.key = e.key
  where e.owner_token = b.owner_token and e.effect_completed_at is null
  order by e.key collate "C"
  for update of e
)
delete from processed_events as e
using mine as m
where e.key = m.key and e.owner_token = m.owner_token and e.effect_completed_at is null
  and $3::float8[] is not null and $4::bigint is not null -- STUB
returning e.key, e.owner_token;
