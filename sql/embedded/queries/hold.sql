-- Holds owned reservations while their execution waits (a Wait node): each lease is extended to
-- its hold from now, never shortened, so a copy delivered during the wait is In Progress instead of
-- taking the key over and running the business step a second time.
-- $items: a JSON array of [key, owner token, hold in milliseconds].
-- Only a processing row of the same owner is held: a key settled or taken over is left as it is.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (select value ->> 0 as key, value ->> 1 as owner_token, value ->> 2 as hold_ms from json_each($items))
update processed_events as e set
  locked_until = max(coalesce(e.locked_until, 0), c.now + i.hold_ms)
from items as i, clock as c
where e.key = i.key and e.owner_token = i.owner_token and e.status = 'processing'
returning key;
