-- STUB
select null::timestamptz as due_at, now() as now where $1::text is not null;
