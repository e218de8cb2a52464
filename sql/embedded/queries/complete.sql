-- Marks reservations completed, optionally storing the response a later duplicate can replay.
-- $items: a JSON array of [key, owner token, response JSON text or null (null keeps the stored one)].
-- Guarded by the owner token: a run whose lease was taken over matches no row and is told so.
-- effect_completed_at records that the owner completed it (kept from the first Complete when one
-- is re-sent): Release and Mark Failed then refuse the key. An inbox event keeps nothing to run
-- again: its kept item, retry due and dead-letter mark are cleared.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (select value ->> 0 as key, value ->> 1 as owner_token, value ->> 2 as response from json_each($items))
update processed_events as e set
  status = 'completed',
  completed_at = c.now,
  effect_completed_at = coalesce(e.effect_completed_at, c.now),
  locked_until = null,
  response = coalesce(i.response, e.response),
  inbox_item = null,
  next_attempt_at = null,
  dead_lettered_at = null
from items as i, clock as c
where e.key = i.key and e.owner_token = i.owner_token and e.status <> 'failed'
returning key, owner_token;
