-- Schema version 5: what the Idempotent Webhook trigger answered, counted per hour and answer.
--   processed_events_answer_counts   one row per hour and answer (new, duplicate, in_progress,
--                                    invalid_signature, key_refused, key_store_unavailable, …): the
--                                    deliveries answered without an execution are visible in Get
--                                    Stats. At most one row per answer and hour: about 90,000 rows
--                                    a year with every answer every hour.
--   hour                             the start of the hour (UTC) the deliveries were answered in.
-- A new, empty table next to the key table; the key table itself is not changed. A database user
-- with only SELECT, INSERT, UPDATE, DELETE on the key table needs the same on this one.
create table if not exists processed_events_answer_counts (
  hour timestamptz not null,
  answer text not null,
  count bigint not null default 0,
  primary key (hour, answer)
);
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 5';
