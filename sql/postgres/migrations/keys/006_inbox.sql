-- Schema version 6: the Idempotent Webhook trigger's inbox (Respond: At Once). An accepted event is
-- kept with the item its retries run from, and the package, not the sender, runs it again after a
-- failed run. Every column is null on a key that is not an inbox event.
--   inbox_owner      who runs the event's retries: an opaque text the trigger gives (its workflow and
--                    node). A key with an owner is only ever run by its inbox: a later delivery of it is
--                    a duplicate, whatever its state.
--   inbox_item       the item a retry runs from, as opaque JSON text (text, not jsonb: handed back
--                    byte for byte). Cleared when a run completes the event.
--   first_retry_ms   the first retry's delay in milliseconds; each next one doubles, up to an hour,
--                    with jitter (lib/store/rules.ts, inboxRetryDelayMs).
--   max_attempts     runs in all, the first included; then the event is dead-lettered.
--   retry_until      no retry falls due after this time; then the event is dead-lettered.
--   next_attempt_at  when the next retry is due (a failed event); null: none due.
--   dead_lettered_at when the event ran out of attempts or time: kept, failed, with its item and last
--                    error, until its retention ends; Claim for Replay takes it again by hand.
-- Nullable columns without defaults: a catalog change, no table rewrite; existing keys are kept as
-- they are (none is an inbox event). The index holds only the events still to run (retry pending or
-- processing), so the trigger's look for due retries never reads the rest of the table.
alter table processed_events add column if not exists inbox_owner text;
alter table processed_events add column if not exists inbox_item text;
alter table processed_events add column if not exists first_retry_ms integer;
alter table processed_events add column if not exists max_attempts integer;
alter table processed_events add column if not exists retry_until timestamptz;
alter table processed_events add column if not exists next_attempt_at timestamptz;
alter table processed_events add column if not exists dead_lettered_at timestamptz;
create index if not exists processed_events_inbox_idx on processed_events (inbox_owner)
  where inbox_owner is not null and dead_lettered_at is null and status <> 'completed';
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 6';
