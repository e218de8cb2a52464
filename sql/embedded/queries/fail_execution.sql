-- Marks failed every live reservation held by one failed n8n execution (Error Trigger workflows),
-- keeping each row with its replay evidence and the error message; the next delivery of the key
-- reserves it again. $execution_id, $error, $workflow_id, $instance_id. Completed rows stay.
-- A row matches only with the failed execution's workflow id and n8n instance too (a row reserved
-- without an instance matches by execution and workflow id).
update processed_events set
  status = 'failed',
  locked_until = null,
  last_error = $error
where execution_id = $execution_id and status = 'processing'
  and workflow_id = $workflow_id and (n8n_instance = $instance_id or n8n_instance is null)
  and $jitter is not null and $retry_cap_ms is not null -- STUB
returning key;
