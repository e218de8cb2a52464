-- The credential's connection test: the database reached and the server's version.
-- $1 'server_version'.
select current_database() as database, current_setting($1) as version;
