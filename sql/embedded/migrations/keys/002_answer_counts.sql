-- Keys schema version 2 of the embedded store (version 5 of the Postgres table): what the
-- Idempotent Webhook trigger answered, counted per hour and answer (see
-- sql/postgres/migrations/keys/005_answer_counts.sql). hour: the start of the hour, whole milliseconds
-- since 1970-01-01 UTC. A new, empty table; the key table is not changed.
create table if not exists processed_events_answer_counts (
  hour integer not null,
  answer text not null,
  count integer not null default 0,
  primary key (hour, answer)
) strict, without rowid;
