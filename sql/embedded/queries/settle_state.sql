-- Why a settle changed nothing: the current owner and state of keys the settle statement did not
-- match (read in the same transaction, right after it). $keys: a JSON array of keys.
select key, owner_token, status, effect_completed_at is not null as effect_completed
from processed_events
where key in (select value from json_each($keys));
