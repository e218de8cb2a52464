-- Marks failed every live reservation held by one failed n8n execution (Error Trigger workflows),
-- keeping each row with its replay evidence and the error message, so the event stays visible
-- (List Keys, Status: Failed) and replayable; the next delivery of the key reserves it again.
-- $1 execution id, $2 error message, $3 workflow id, $4 n8n instance id, $5 jitter factor
-- (inboxJitter), $6 the longest retry delay in milliseconds. Completed rows stay: their business
-- step already ran.
-- Execution ids are numbered per n8n instance: two instances sharing this table (staging and
-- production) both have an execution 1234. So a row matches only with the failed execution's
-- workflow id and n8n instance too. A row reserved before schema version 4 has no instance
-- (n8n_instance is null): it matches by execution and workflow id.
-- An inbox event gets its next retry or is dead-lettered, as in fail.sql (the same <inbox-retry> block).
with mine as (
  select e.key, r.retry, r.due
  from processed_events as e
  cross join (select $5::double precision as jitter) as b
  cross join (select $6::double precision as retry_cap_ms) as c
  -- <inbox-retry>
  cross join lateral (
    select d.due, e.inbox_owner is not null and e.dead_lettered_at is null and e.attempts < e.max_attempts and d.due <= e.retry_until as retry
    from (
      select now() + least(c.retry_cap_ms, e.first_retry_ms * (1::bigint << least(greatest(e.attempts - 1, 0), 30))) * b.jitter
        * interval '1 millisecond' as due
    ) as d
  ) as r
  -- </inbox-retry>
  where e.execution_id = $1 and e.status = 'processing'
    and e.workflow_id = $3 and (e.n8n_instance = $4 or e.n8n_instance is null)
  order by e.key collate "C"
  for update of e
)
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = $2,
  next_attempt_at = case when m.retry then m.due end,
  dead_lettered_at = case when e.inbox_owner is null or m.retry then null else coalesce(e.dead_lettered_at, now()) end
from mine as m
where e.key = m.key and e.execution_id = $1 and e.status = 'processing'
returning e.key;
