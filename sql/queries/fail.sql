-- Marks reservations failed, keeping the row and the error message for inspection;
-- the next delivery of the key reserves it again (attempts + 1).
-- $1 keys text[], $2 owner tokens uuid[], $3 error messages text[].
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = b.last_error
from unnest($1::text[], $2::uuid[], $3::text[]) as b(key, owner_token, last_error)
where e.key = b.key and e.owner_token = b.owner_token
returning e.key;
