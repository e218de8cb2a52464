-- Stats: counts by status now, and what happened to keys seen within a window. $1 window seconds.
-- The table keeps counters per key, not a log of deliveries, so the window counts are per key
-- last seen in the window: its duplicates and reclaims are the key's totals. Inbox events with a
-- retry pending and dead-lettered ones are counted in failed too. One aggregate pass over the table
-- (no index can count by status): meant for a daily report, not per delivery.
select count(*) as total,
       count(*) filter (where status = 'processing' and locked_until > now()) as processing,
       count(*) filter (where status = 'processing' and locked_until <= now()) as stuck_leases,
       count(*) filter (where status = 'completed') as completed,
       count(*) filter (where status = 'failed') as failed,
       count(*) filter (where first_seen >= now() - make_interval(secs => $1::double precision)) as new_in_window,
       coalesce(sum(duplicate_count) filter (where last_seen >= now() - make_interval(secs => $1::double precision)), 0)::bigint as duplicates_in_window,
       coalesce(sum(attempts - 1) filter (where last_seen >= now() - make_interval(secs => $1::double precision)), 0)::bigint as reclaims_in_window,
       count(*) filter (where status = 'failed' and last_seen >= now() - make_interval(secs => $1::double precision)) as failed_in_window,
       count(*) filter (where inbox_owner is not null and dead_lettered_at is null and status = 'failed') as retry_pending,
       count(*) filter (where dead_lettered_at is not null) as dead_lettered
from processed_events;
