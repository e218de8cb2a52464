-- Get Key: the stored records of these keys (read only). $1 keys text[], $2 read each inbox event's
-- kept item too (boolean). By hand, for one key:
--   select * from processed_events where key = '<key>';
-- The owner token is never read: whoever looks a key up must not be able to settle it.
-- The payload comes as text: its numbers are read exactly from it (pg would parse jsonb with
-- JSON.parse, which rounds numbers beyond 2^53).
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, response, completed_at, last_error,
       payload::text as payload, payload is not null as payload_stored, payload_bytes, source, correlation_id,
       status = 'processing' and locked_until > now() as lease_active,
       expires_at is not null and expires_at <= now() as retention_ended,
       inbox_owner, inbox_item is not null as has_inbox_item, case when $2::boolean then inbox_item end as inbox_item,
       max_attempts, retry_until, next_attempt_at, dead_lettered_at
from processed_events
where key = any($1::text[]);
