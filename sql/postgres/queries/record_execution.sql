-- Records the n8n execution that runs a key's event, while the key is still its owner's: the
-- Idempotent Webhook trigger reserves the key before the execution (and its id) exist.
-- $1 key, $2 owner token uuid, $3 execution id. No row comes back when the key is not the owner's.
update processed_events set execution_id = $3::text
where key = $1 and owner_token = $2::uuid
returning key;
