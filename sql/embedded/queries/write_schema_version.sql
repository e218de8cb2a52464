-- Records the schema version a migration brought the file (object '') or a table to. $object, $family, $version.
insert into n8n_idempotency_schema (object, family, version) values ($object, $family, $version)
on conflict (object) do update set family = excluded.family, version = excluded.version;
