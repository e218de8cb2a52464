-- Release, first step (in the same transaction as release.sql): an inbox event is never deleted
-- (its kept item is the only copy of the event); it is failed and gets its next retry, or is
-- dead-lettered, as fail.sql does (the same <inbox-retry> block). release.sql then deletes the other keys.
-- $items: a JSON array of [key, owner token, jitter factor (inboxJitter)], $retry_cap_ms.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (
  select value ->> 0 as key, value ->> 1 as owner_token, value ->> 2 as jitter, $retry_cap_ms as retry_cap_ms
  from json_each($items)
)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = 'Its run released the key (Release).',
  (next_attempt_at, dead_lettered_at) = (
    select case when r.retry then r.due end,
           case when r.retry then null else coalesce(e.dead_lettered_at, r.now) end
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
where e.key = i.key and e.owner_token = i.owner_token and e.effect_completed_at is null and e.inbox_owner is not null
returning key, owner_token;
