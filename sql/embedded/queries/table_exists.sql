-- Whether a table of this name exists in the file (made by the package or not). $name.
select count(*) as found from sqlite_schema where type = 'table' and name = $name;
