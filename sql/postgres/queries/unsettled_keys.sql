-- Why a settle changed nothing for some keys (read only): their owner and state, sent only when
-- Complete, Release or Mark Failed left a key unchanged. $1 keys text[].
-- No row: not found. Another owner token: not the owner (a reclaim took the key over). Ours and
-- completed by Complete (effect_completed): completed. Otherwise: failed (Mark Failed or a
-- Permanent-mode reservation already settled).
select key, owner_token, status, effect_completed_at is not null as effect_completed
from processed_events
where key = any($1::text[]);
