-- Serialises the migrations of one table, in this process and others, until the transaction ends:
-- concurrent CREATE ... IF NOT EXISTS can still collide in the catalog. $1 the table as
-- "schema"."table".
select pg_advisory_xact_lock(hashtext($1));
