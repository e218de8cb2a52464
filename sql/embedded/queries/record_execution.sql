-- Records the n8n execution that runs a key's event, while the key is still its owner's and its
-- lease has not ended, as sql/postgres/queries/record_execution.sql does. $key, $owner_token,
-- $execution_id.
update processed_events set execution_id = $execution_id
where key = $key and owner_token = $owner_token
  and (locked_until is null or locked_until > cast(round(unixepoch('subsec') * 1000) as integer))
returning key;
