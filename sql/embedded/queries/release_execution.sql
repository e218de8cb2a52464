-- Releases every live reservation held by one failed n8n execution (Error Trigger workflows).
-- $execution_id, $workflow_id, $instance_id. Completed rows stay: their business step already ran.
-- Execution ids are numbered per n8n instance, so a row matches only with the failed execution's
-- workflow id and n8n instance too (a row reserved without an instance matches by the other two).
-- An inbox event is never deleted: release_execution_inbox.sql, run before this in the same
-- transaction, has failed it and scheduled its retry.
delete from processed_events
where execution_id = $execution_id and status = 'processing' and inbox_owner is null
  and workflow_id = $workflow_id and (n8n_instance = $instance_id or n8n_instance is null)
returning key;
