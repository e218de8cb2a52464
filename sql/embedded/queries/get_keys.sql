-- Get Key: the stored records of these keys (read only). $keys: a JSON array of keys, $inbox_item
-- (1: read each inbox event's kept item too). By hand:
--   select * from processed_events where key = '<key>';
-- The owner token is never read: whoever looks a key up must not be able to settle it.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer))
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, payload_hash, response, completed_at, last_error,
       payload, payload is not null as payload_stored, payload_bytes, source, correlation_id,
       coalesce(status = 'processing' and locked_until > c.now, 0) as lease_active,
       coalesce(expires_at <= c.now, 0) as retention_ended,
       inbox_owner, inbox_item is not null as has_inbox_item, case when $inbox_item then inbox_item end as inbox_item,
       max_attempts, retry_until, next_attempt_at, dead_lettered_at
from processed_events, clock as c
where key in (select value from json_each($keys));
