-- The schema state of one table before its first statement (and again under the migration lock):
-- whether it exists, and its version, stamped in its comment by the last migration it ran
-- ('n8n-nodes-idempotency <family> schema version <n>'). $1 the table as "schema"."table".
-- to_regclass is null for a missing table or schema; obj_description needs no privilege on the
-- table. The database's time comes along: settle retries compare lease ends with it.
select t.oid is not null as exists, obj_description(t.oid, 'pg_class') as stamp, now() as database_now
from (select to_regclass($1) as oid) t;
