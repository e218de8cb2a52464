-- Records the n8n execution that runs a key's event, while the key is still its owner's, as
-- sql/postgres/queries/record_execution.sql does. $key, $owner_token, $execution_id.
update processed_events set execution_id = $execution_id
where key = $key and owner_token = $owner_token
returning key;
