-- Schema version 3: evidence for replay and tracing, stored per key by Idempotency Reserve's options
-- "Store Payload", "Source" and "Correlation ID" (all empty when those options are off).
--   payload         the delivery's body as JSON (the item's body), null when not stored (off, over
--                   the size cap, or a key reserved before version 3)
--   payload_bytes   the size of that JSON text in UTF-8 bytes, also when it was over the cap and not
--                   stored (so a dead-letter view can say why there is nothing to replay)
--   source          who sent the event: a provider or scope such as stripe
--   correlation_id  a trace id (traceparent, x-request-id, ...) or the n8n execution id
-- Adding nullable columns without defaults only changes the catalog: no table rewrite, existing
-- keys are kept as they are. Idempotent, like the others.
alter table processed_events add column if not exists payload jsonb;
alter table processed_events add column if not exists payload_bytes integer;
alter table processed_events add column if not exists source text;
alter table processed_events add column if not exists correlation_id text;
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 3';
