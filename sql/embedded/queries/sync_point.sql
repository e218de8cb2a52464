-- Changes the store file's sync point (a meta row of its own) to a new value, so that its synced
-- commit writes to the WAL and syncs it, with everything committed before it. $value: a new value.
insert into n8n_idempotency_meta (name, value) values ('sync_point', $value)
on conflict (name) do update set value = excluded.value;
