-- Marks failed every live reservation held by one failed n8n execution (Error Trigger workflows),
-- keeping each row with its replay evidence and the error message; the next delivery of the key
-- reserves it again. $execution_id, $error, $workflow_id, $instance_id, $jitter (inboxJitter),
-- $retry_cap_ms. Completed rows stay.
-- A row matches only with the failed execution's workflow id and n8n instance too (a row reserved
-- without an instance matches by execution and workflow id).
-- An inbox event gets its next retry or is dead-lettered, as in fail.sql (the same <inbox-retry> block).
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (select $jitter as jitter, $retry_cap_ms as retry_cap_ms)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = $error,
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
where e.execution_id = $execution_id and e.status = 'processing'
  and e.workflow_id = $workflow_id and (e.n8n_instance = $instance_id or e.n8n_instance is null)
returning key;
