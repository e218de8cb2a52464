-- Records the n8n execution that runs a key's event, while the key is still its owner's and its
-- lease has not ended: the Idempotent Webhook trigger reserves the key before the execution (and
-- its id) exist, and an execution that starts after the lease (a backlog) may find the key taken
-- over, or about to be. A Permanent key (no lease) is its owner's until it is settled.
-- $1 key, $2 owner token uuid, $3 execution id. No row comes back when the key is not the owner's.
update processed_events set execution_id = $3::text
where key = $1 and owner_token = $2::uuid and (locked_until is null or locked_until > now())
returning key;
