-- Marks failed every live reservation held by one failed n8n execution (Error Trigger workflows),
-- keeping each row with its replay evidence and the error message, so the event stays visible
-- (List Keys, Status: Failed) and replayable; the next delivery of the key reserves it again.
-- $1 execution id, $2 error message, $3 workflow id, $4 n8n instance id. Completed rows stay:
-- their business step already ran.
-- Execution ids are numbered per n8n instance: two instances sharing this table (staging and
-- production) both have an execution 1234. So a row matches only with the failed execution's
-- workflow id and n8n instance too. A row reserved before schema version 4 has no instance
-- (n8n_instance is null): it matches by execution and workflow id.
update processed_events set
  status = 'failed',
  locked_until = null,
  last_error = $2
where execution_id = $1 and status = 'processing'
  and workflow_id = $3 and (n8n_instance = $4 or n8n_instance is null)
  and $5::float8 is not null and $6::bigint is not null -- STUB
returning key;
