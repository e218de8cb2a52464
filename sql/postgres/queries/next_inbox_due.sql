-- When one inbox owner's next event may become claimable (claim_due_inbox.sql): the earliest retry
-- due or lease end among its events still to run, null when it has none; with the database's now,
-- so the wait is reckoned on one clock. $1 owner. Read through the partial index
-- processed_events_inbox_idx, which holds only the events still to run.
select min(case when status = 'failed' then next_attempt_at else locked_until end) as due_at, now() as now
from processed_events
where inbox_owner = $1 and inbox_owner is not null and dead_lettered_at is null and status <> 'completed';
