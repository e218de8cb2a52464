-- List Keys: one page of records in key order, after a cursor (the last key of the previous page).
-- $1 after key text ('' for the first page), $2 status text or null, $3 stuck leases only boolean
-- (processing with an expired lease), $4 first seen at least this many seconds ago or null,
-- $5 key prefix text or null, $6 page size (the node caps it), $7 replayable only boolean (failed, or
-- processing with an expired lease: the keys a replay may take over).
-- Key order and a limit let Postgres read the primary key index and stop when the page is full;
-- a filter that matches almost nothing may still read most of the index (see docs/replay-and-visibility.md).
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, response, completed_at, last_error,
       payload, payload is not null as payload_stored, payload_bytes, source, correlation_id,
       status = 'processing' and locked_until > now() as lease_active,
       expires_at is not null and expires_at <= now() as retention_ended
from processed_events
where key > $1::text
  and ($2::text is null or status = $2::text)
  and (not $3::boolean or (status = 'processing' and locked_until <= now()))
  and ($4::double precision is null or first_seen <= now() - make_interval(secs => $4::double precision))
  and ($5::text is null or left(key, length($5::text)) = $5::text)
  and (not $7::boolean or status = 'failed' or (status = 'processing' and locked_until <= now()))
order by key
limit $6::integer;
