-- The schema version of the file itself (object '') or of one of the package's tables. $object.
select family, version from n8n_idempotency_schema where object = $object;
