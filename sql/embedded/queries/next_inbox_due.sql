-- STUB
select null as due_at, 0 as now where $owner is null;
