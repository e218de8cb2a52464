-- The columns of one table in the file, by its name ($name): moving the keys to Postgres checks
-- the table is a keys table of the package before reading it.
select name from pragma_table_info($name);
