-- When one inbox owner's next event may become claimable, as sql/postgres/queries/next_inbox_due.sql:
-- the earliest retry due or lease end among its events still to run (null: none), with the
-- statement's now. $owner.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer))
select min(case when e.status = 'failed' then e.next_attempt_at else e.locked_until end) as due_at, c.now as now
from processed_events as e, clock as c
where e.inbox_owner = $owner and e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed';
