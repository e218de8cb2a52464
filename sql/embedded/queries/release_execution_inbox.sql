-- Release by execution, first step (in the same transaction as release_execution.sql): the
-- execution's inbox events are failed and retried (or dead-lettered) as release_inbox.sql does;
-- release_execution.sql then deletes its other keys. $execution_id, $workflow_id, $instance_id,
-- $jitter (inboxJitter), $retry_cap_ms.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (select $jitter as jitter, $retry_cap_ms as retry_cap_ms)
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
where e.execution_id = $execution_id and e.status = 'processing' and e.inbox_owner is not null
  and e.workflow_id = $workflow_id and (e.n8n_instance = $instance_id or e.n8n_instance is null)
returning key;
