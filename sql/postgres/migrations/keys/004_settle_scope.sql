-- Schema version 4: settling a key cannot reach past what it is meant to settle.
--   n8n_instance         the n8n instance id of the run that reserved (or claimed) the key. Release and
--                        Mark Failed with Key From = Failed Execution match it with the execution and
--                        workflow ids: execution ids are numbered per n8n instance, so two instances on
--                        one table (staging and production) both have an execution 1234. Null for keys
--                        reserved before version 4.
--   effect_completed_at  when the key's owner completed it (Idempotency Key -> Complete): its business
--                        step ran. Release and Mark Failed refuse such a key, so a redelivery stays a
--                        Duplicate. Null for a Permanent-mode reservation that was never completed
--                        (its owner may still release it: the recipe's error path) and for keys
--                        completed before version 4.
-- Nullable columns without defaults: a catalog change, no table rewrite; existing keys are kept.
alter table processed_events add column if not exists n8n_instance text;
alter table processed_events add column if not exists effect_completed_at timestamptz;
comment on table processed_events is 'n8n-nodes-idempotency keys schema version 4';
