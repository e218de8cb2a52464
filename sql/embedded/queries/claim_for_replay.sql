-- Claim for Replay: takes over stored keys so a replay can run their business step again, the same
-- rule as the Postgres store's sql/postgres/queries/claim_for_replay.sql.
-- $claims: a JSON array of [key, owner token] (each key once), $lease_ms, $retention_ms,
-- $execution_id, $workflow_id, $instance_id.
--   status 'failed'                                     -> claimed: attempts + 1
--   status 'processing', lease ran out (locked_until <= now) -> claimed from a dead run: attempts + 1
--   status 'processing', lease still running (or none)  -> not claimed: in progress
--   status 'completed'                                  -> not claimed: completed
-- Claimed is what Idempotency Reserve does when it takes a key over (without the retention reset):
-- a new owner token and lease. The stored payload, source and correlation id are kept. A
-- dead-lettered inbox event is claimed too: its dead-letter mark and any retry due are cleared, and
-- its kept item comes back with the claim.
-- The store runs it inside BEGIN IMMEDIATE after claim_for_replay_current.sql.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
claims as (select value ->> 0 as key, value ->> 1 as owner_token from json_each($claims))
update processed_events as e set
  status = 'processing',
  owner_token = k.owner_token,
  locked_until = c.now + $lease_ms,
  expires_at = c.now + $retention_ms,
  attempts = min(e.attempts, 2147483646) + 1,
  last_seen = c.now,
  execution_id = $execution_id,
  workflow_id = $workflow_id,
  n8n_instance = $instance_id,
  response = null,
  completed_at = null,
  effect_completed_at = null,
  next_attempt_at = null,
  dead_lettered_at = null
from claims as k, clock as c
where e.key = k.key and (e.status = 'failed' or (e.status = 'processing' and e.locked_until <= c.now))
returning key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
          execution_id, workflow_id, key_source, payload_hash, response, completed_at, last_error,
          payload, payload is not null as payload_stored, payload_bytes, source, correlation_id, owner_token,
          1 as lease_active, inbox_item;
