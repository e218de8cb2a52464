-- Marks reservations failed, keeping the row and the error message for inspection; the next
-- delivery of the key reserves it again (attempts + 1).
-- $items: a JSON array of [key, owner token, error message, jitter factor (inboxJitter)],
-- $retry_cap_ms: the longest retry delay (INBOX_RETRY_CAP_MS).
-- A key its owner completed (effect_completed_at set) is never marked failed: its business step
-- ran, and a failed key would let the next delivery (or a replay) run it again.
-- An inbox event gets its next retry, or is dead-lettered, as sql/postgres/queries/fail.sql says
-- (the <inbox-retry> block: lib/store/rules.ts inboxRetryDelayMs).
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (
  select value ->> 0 as key, value ->> 1 as owner_token, value ->> 2 as last_error, value ->> 3 as jitter, $retry_cap_ms as retry_cap_ms
  from json_each($items)
)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = i.last_error,
  (next_attempt_at, dead_lettered_at) = (
    select case when r.retry then r.due end,
           case when e.inbox_owner is null or r.retry then null else coalesce(e.dead_lettered_at, r.now) end
    from (
      select d.now, d.due,
             e.inbox_owner is not null and e.dead_lettered_at is null and e.attempts < e.max_attempts and d.due <= e.retry_until as retry
      from (
        -- <inbox-retry>
        select c.now, c.now + cast(round(min(i.retry_cap_ms, e.first_retry_ms * (1 << min(max(e.attempts - 1, 0), 30))) * i.jitter) as integer) as due
        -- </inbox-retry>
      ) as d
    ) as r
  )
from items as i, clock as c
where e.key = i.key and e.owner_token = i.owner_token and e.effect_completed_at is null
returning key, owner_token;
