-- One page of the keys table in key order, with every column moving the keys to Postgres carries
-- over (the owner token too: a processing key keeps its owner). $after: the last key of the
-- previous page ('' for the first); $limit: keys per page.
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, response,
       completed_at, effect_completed_at, last_error, payload, payload_bytes, source, correlation_id
from processed_events
where key > $after
order by key
limit $limit;
