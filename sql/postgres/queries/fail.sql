-- Marks reservations failed, keeping the row and the error message for inspection;
-- the next delivery of the key reserves it again (attempts + 1).
-- $1 keys text[], $2 owner tokens uuid[], $3 error messages text[], $4 jitter factors float8[] (one
-- per key, lib/store/rules.ts inboxJitter), $5 the longest retry delay in milliseconds (INBOX_RETRY_CAP_MS).
-- A key its owner completed (effect_completed_at set) is never marked failed: its business step
-- ran, and a failed key would let the next delivery (or a replay) run it again.
-- An inbox event (inbox_owner set) is run again by its inbox, not by a delivery: its next retry is
-- due after the delay of the <inbox-retry> block (the rule of lib/store/rules.ts inboxRetryDelayMs,
-- from the attempts so far), unless that was its last attempt or the retry would fall due after its
-- retry window: then it is dead-lettered (kept failed with its item, no retry due).
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a settle and a redelivered batch of the same keys never
-- deadlock; the update then changes only rows this statement holds. The retry is reckoned from the
-- row as locked.
with mine as (
  select e.key, b.owner_token, b.last_error, r.retry, r.due
  from processed_events as e
  join unnest($1::text[], $2::uuid[], $3::text[], $4::double precision[]) as b(key, owner_token, last_error, jitter) on b.key = e.key
  cross join (select $5::double precision as retry_cap_ms) as c
  -- <inbox-retry>
  cross join lateral (
    select d.due, e.inbox_owner is not null and e.dead_lettered_at is null and e.attempts < e.max_attempts and d.due <= e.retry_until as retry
    from (
      select now() + least(c.retry_cap_ms, e.first_retry_ms * (1::bigint << least(greatest(e.attempts - 1, 0), 30))) * b.jitter
        * interval '1 millisecond' as due
    ) as d
  ) as r
  -- </inbox-retry>
  where e.owner_token = b.owner_token and e.effect_completed_at is null
  order by e.key collate "C"
  for update of e
)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = m.last_error,
  next_attempt_at = case when m.retry then m.due end,
  dead_lettered_at = case when e.inbox_owner is null or m.retry then null else coalesce(e.dead_lettered_at, now()) end
from mine as m
where e.key = m.key and e.owner_token = m.owner_token and e.effect_completed_at is null
returning e.key, e.owner_token;
