-- Releases every live reservation held by one failed n8n execution (Error Trigger workflows).
-- $1 execution id. Completed rows stay: their business step already ran.
delete from processed_events
where execution_id = $1 and status = 'processing'
returning key;
