-- List Keys: one page of records in key order, after a cursor (the last key of the previous page).
-- $1 after key text ('' for the first page), $2 status text or null, $3 stuck leases only boolean
-- (processing with an expired lease), $4 first seen at least this many seconds ago or null,
-- $5 key prefix text or null, $6 page size (the node caps it), $7 replayable only boolean (failed, or
-- processing with an expired lease: the keys a replay may take over), $8 most bytes of stored
-- payloads and responses on one page, $9 dead-lettered inbox events only boolean.
-- An inbox event's kept item is never read here (has_inbox_item says whether there is one).
-- Key order and a limit let Postgres read the primary key index and stop when the page is full;
-- a filter that matches almost nothing may still read most of the index (see docs/replay-and-visibility.md).
-- A payload and a response may each be 1 MB, so 1000 keys could be 2 GB in one n8n run: the page
-- ends early, in key order, before its stored payloads and responses pass $8 bytes (the first key
-- always comes), and page_rows (how many keys the limit gave) tells the caller there is more.
-- Sizes come from payload_bytes and the response's text, so the large values are only detoasted
-- for the keys sent.
-- The payload comes as text, as in get_keys.sql: its numbers are read exactly from it.
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, response, completed_at, last_error,
       payload::text as payload, payload_stored, payload_bytes, source, correlation_id, lease_active, retention_ended,
       inbox_owner, has_inbox_item, max_attempts, retry_until, next_attempt_at, dead_lettered_at, page_rows
from (
  select page.*,
         sum(row_bytes) over (order by key rows between unbounded preceding and current row) as bytes_through,
         row_number() over (order by key) as position,
         count(*) over () as page_rows
  from (
    select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
           execution_id, workflow_id, key_source, response, completed_at, last_error,
           payload, payload is not null as payload_stored, payload_bytes, source, correlation_id,
           status = 'processing' and locked_until > now() as lease_active,
           expires_at is not null and expires_at <= now() as retention_ended,
           inbox_owner, inbox_item is not null as has_inbox_item, max_attempts, retry_until, next_attempt_at, dead_lettered_at,
           case when payload is null then 0 else coalesce(payload_bytes, octet_length(payload::text)) end
             + coalesce(octet_length(response::text), 0) as row_bytes
    from processed_events
    where key > $1::text
      and ($2::text is null or status = $2::text)
      and (not $3::boolean or (status = 'processing' and locked_until <= now()))
      and ($4::double precision is null or first_seen <= now() - make_interval(secs => $4::double precision))
      and ($5::text is null or left(key, length($5::text)) = $5::text)
      and (not $7::boolean or status = 'failed' or (status = 'processing' and locked_until <= now()))
      and (not $9::boolean or dead_lettered_at is not null)
    order by key
    limit $6::integer
  ) page
) sized
where position = 1 or bytes_through <= $8::bigint
order by key;
