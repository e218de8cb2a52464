-- Releases every live reservation held by one failed n8n execution (Error Trigger workflows).
-- $1 execution id, $2 workflow id, $3 n8n instance id. Completed rows stay: their business step
-- already ran.
-- Execution ids are numbered per n8n instance: two instances sharing this table (staging and
-- production) both have an execution 1234. So a row matches only with the failed execution's
-- workflow id and n8n instance too. A row reserved before schema version 4 has no instance
-- (n8n_instance is null): it matches by execution and workflow id.
delete from processed_events
where execution_id = $1 and status = 'processing'
  and workflow_id = $2 and (n8n_instance = $3 or n8n_instance is null)
  and $4::float8 is not null and $5::bigint is not null -- STUB
returning key;
