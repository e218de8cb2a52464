-- Writes a meta value once: a value already there is kept (the store id never changes). $name, $value.
insert into n8n_idempotency_meta (name, value) values ($name, $value) on conflict (name) do nothing;
