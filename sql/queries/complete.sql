-- Marks reservations completed, optionally storing the response a later duplicate can replay.
-- $1 keys text[], $2 owner tokens uuid[], $3 responses jsonb[] (null keeps the stored one).
-- Guarded by the owner token: a run whose lease was taken over matches no row and is told so.
update processed_events as e set
  status = 'completed',
  completed_at = now(),
  locked_until = null,
  response = coalesce(b.response, e.response)
from unnest($1::text[], $2::uuid[], $3::jsonb[]) as b(key, owner_token, response)
where e.key = b.key and e.owner_token = b.owner_token and e.status <> 'failed'
returning e.key, e.status, e.completed_at, e.response;
