-- Marks reservations failed, keeping the row and the error message for inspection; the next
-- delivery of the key reserves it again (attempts + 1).
-- $items: a JSON array of [key, owner token, error message].
-- A key its owner completed (effect_completed_at set) is never marked failed: its business step
-- ran, and a failed key would let the next delivery (or a replay) run it again.
with items as (select value ->> 0 as key, value ->> 1 as owner_token, value ->> 2 as last_error from json_each($items))
update processed_events as e set
  status = 'failed',
  locked_until = null,
  last_error = i.last_error
from items as i
where e.key = i.key and e.owner_token = i.owner_token and e.effect_completed_at is null
  and $retry_cap_ms is not null -- STUB
returning key, owner_token;
