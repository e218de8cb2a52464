-- n8n-nodes-idempotency embedded store: what every store file holds besides its tables (file
-- schema version 1). The nodes run it when they open a new file; safe to run more than once.
--   n8n_idempotency_meta    name/value pairs: store_id is a random UUID written once, when the file
--                           is created. Two processes that read the same store_id use the same file.
--   n8n_idempotency_schema  the schema version of the file itself (object '') and of each table the
--                           package created in it (keys or order family). A version higher than the
--                           package knows is refused.
create table if not exists n8n_idempotency_meta (
  name text primary key not null,
  value text not null
) strict;
create table if not exists n8n_idempotency_schema (
  object text primary key not null,
  family text not null,
  version integer not null
) strict;
