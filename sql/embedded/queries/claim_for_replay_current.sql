-- Claim for Replay, first step (in the same BEGIN IMMEDIATE transaction as claim_for_replay.sql):
-- the stored records of the keys to claim, as they are before the claim. $keys: a JSON array of keys.
-- The owner token is not read: a key not claimed by this call must not be settled by it.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer))
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, payload_hash, response, completed_at, last_error,
       payload, payload is not null as payload_stored, payload_bytes, source, correlation_id,
       coalesce(locked_until > c.now, 0) as lease_active
from processed_events, clock as c
where key in (select value from json_each($keys));
