-- List Keys: one page of records in key order (SQLite's binary order: by UTF-8 bytes), after a
-- cursor (the last key of the previous page).
-- $after_key ('' for the first page), $status or null, $stuck_only (1: processing with an expired
-- lease), $older_than_ms (first seen at least this long ago) or null, $prefix or null, $limit (the
-- node caps it), $replayable_only (1: failed, or processing with an expired lease), $max_bytes (most
-- bytes of stored payloads and responses on one page), $dead_lettered_only (1: dead-lettered inbox
-- events only). An inbox event's kept item is never read here (has_inbox_item says whether there is one).
-- The page ends early, in key order, before its stored payloads and responses pass $max_bytes (the
-- first key always comes), and page_rows (how many keys the limit gave) tells the caller there is more.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer))
select key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at,
       execution_id, workflow_id, key_source, payload_hash, response, completed_at, last_error,
       payload, payload_stored, payload_bytes, source, correlation_id, lease_active, retention_ended,
       inbox_owner, has_inbox_item, max_attempts, retry_until, next_attempt_at, dead_lettered_at, page_rows
from (
  select page.*,
         sum(row_bytes) over (order by key rows between unbounded preceding and current row) as bytes_through,
         row_number() over (order by key) as position,
         count(*) over () as page_rows
  from (
    select e.key, e.status, e.attempts, e.duplicate_count, e.first_seen, e.last_seen, e.locked_until, e.expires_at,
           e.execution_id, e.workflow_id, e.key_source, e.payload_hash, e.response, e.completed_at, e.last_error,
           e.payload, e.payload is not null as payload_stored, e.payload_bytes, e.source, e.correlation_id,
           coalesce(e.status = 'processing' and e.locked_until > c.now, 0) as lease_active,
           coalesce(e.expires_at <= c.now, 0) as retention_ended,
           e.inbox_owner, e.inbox_item is not null as has_inbox_item, e.max_attempts, e.retry_until, e.next_attempt_at, e.dead_lettered_at,
           case when e.payload is null then 0 else coalesce(e.payload_bytes, octet_length(e.payload)) end
             + coalesce(octet_length(e.response), 0) as row_bytes
    from processed_events as e, clock as c
    where e.key > $after_key
      and ($status is null or e.status = $status)
      and (not $stuck_only or (e.status = 'processing' and e.locked_until <= c.now))
      and ($older_than_ms is null or e.first_seen <= c.now - $older_than_ms)
      and ($prefix is null or substr(e.key, 1, length($prefix)) = $prefix)
      and (not $replayable_only or e.status = 'failed' or (e.status = 'processing' and e.locked_until <= c.now))
      and (not $dead_lettered_only or e.dead_lettered_at is not null)
    order by e.key
    limit $limit
  ) as page
) as sized
where position = 1 or bytes_through <= $max_bytes
order by key;
