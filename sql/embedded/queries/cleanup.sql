-- Deletes keys whose retention ended, one chunk per run of the statement; the store repeats it
-- (yielding to n8n between chunks) until a chunk deletes fewer rows than asked.
-- $retention_ms for rows without a retention end of their own, $limit rows at most.
-- Retention, the same rule as reserve.sql (which treats these keys as absent): a key is kept until
-- the later of its retention end and its lease end, so a running lease is never deleted. The
-- retention end is expires_at, set by every reservation; only a row without one ends
-- $retention_ms after first_seen. An inbox event still to run (not completed, not dead-lettered) has
-- no retention end.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer))
delete from processed_events
where rowid in (
  select e.rowid from processed_events as e, clock as c
  -- The first condition follows from the rule and lets the expires_at and first_seen indexes find the rows.
  where (e.expires_at <= c.now or (e.expires_at is null and e.first_seen <= c.now - $retention_ms))
    and max(coalesce(e.expires_at, e.first_seen + $retention_ms), coalesce(e.locked_until, 0)) <= c.now
    and not (e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed')
  limit $limit
);
