-- Deletes keys whose retention ended, one batch per run of the statement; repeat until it deletes
-- fewer rows than the batch size. Rows another session holds locked (a reservation in flight) are
-- skipped, so reservations never wait on it.
-- $1 retention in seconds for rows without a retention end of their own, $2 batch size.
--
-- Retention, the same rule as reserve.sql (which treats these keys as absent): a key is kept until
-- the later of its retention end and its lease end, so a running lease is never deleted. The
-- retention end is expires_at, which every reservation (new, retry, reclaim) sets to now + the
-- Reserve node's Retention; only a row without one (the hand-built recipe's, or inserted by hand)
-- ends $1 after first_seen. A reclaimed or retried key whose first_seen is old is kept. An inbox
-- event still to run (a retry pending, or processing: not completed, not dead-lettered) has no
-- retention end: its kept item is the only copy of the event.
--
-- For cron without n8n, the same rule in one statement (30 days for rows without expires_at; run it
-- again until it deletes 0 rows):
--   psql "$DATABASE_URL" -c "delete from processed_events where key = any(array(select key from processed_events as e where (e.expires_at <= now() or (e.expires_at is null and e.first_seen <= now() - interval '30 days')) and greatest(coalesce(e.expires_at, e.first_seen + interval '30 days'), e.locked_until) <= now() and not (e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed') limit 10000 for update skip locked))"
-- The DELETE finds the doomed rows by primary key (key = any(array(...))): a join against a CTE
-- made every batch hash-join over a full scan of the table, so cleanup slowed as the table grew
-- (5.2x slower on 1.2 M rows, BENCHMARKS.md).
delete from processed_events
where key = any(array(
  select e.key from processed_events as e
  -- The first condition follows from the rule and lets the expires_at and first_seen indexes find the rows.
  where (e.expires_at <= now() or (e.expires_at is null and e.first_seen <= now() - make_interval(secs => $1::double precision)))
    -- The retention rule, as in reserve.sql.
    and greatest(coalesce(e.expires_at, e.first_seen + make_interval(secs => $1::double precision)), e.locked_until) <= now()
    and not (e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed')
  limit $2
  for update skip locked
));
