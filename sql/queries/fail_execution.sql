-- Marks failed every live reservation held by one failed n8n execution (Error Trigger workflows),
-- keeping each row with its replay evidence and the error message, so the event stays visible
-- (List Keys, Status: Failed) and replayable; the next delivery of the key reserves it again.
-- $1 execution id, $2 error message. Completed rows stay: their business step already ran.
update processed_events set
  status = 'failed',
  locked_until = null,
  last_error = $2
where execution_id = $1 and status = 'processing'
returning key;
