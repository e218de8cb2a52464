-- How many keys the table holds: moving the keys to Postgres counts them before and after, to say
-- whether workflows still changed the file meanwhile.
select count(*) as n from processed_events;
