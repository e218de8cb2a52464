-- Deletes keys past retention, one batch per run of the statement; repeat until it deletes
-- fewer rows than the batch size. Rows under a valid lease are never deleted, and rows another
-- session holds locked (a reservation in flight) are skipped, so reservations never wait on it.
-- $1 retention in seconds (rows first seen longer ago go, as do rows whose expires_at passed), $2 batch size.
-- For cron without n8n, the same rule in one statement (30 days; run it again until it deletes 0 rows):
--   psql "$DATABASE_URL" -c "delete from processed_events where key in (select key from processed_events where (expires_at <= now() or first_seen < now() - interval '30 days') and not coalesce(status = 'processing' and locked_until > now(), false) limit 10000 for update skip locked)"
with doomed as (
  select key from processed_events
  where (expires_at <= now() or first_seen < now() - make_interval(secs => $1::double precision))
    and not coalesce(status = 'processing' and locked_until > now(), false)
  limit $2
  for update skip locked
)
delete from processed_events as e
using doomed
where e.key = doomed.key;
