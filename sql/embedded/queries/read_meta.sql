-- One value of the store file's meta table (store_id: the file's random id). $name.
select value from n8n_idempotency_meta where name = $name;
