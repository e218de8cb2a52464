-- Claim Due Inbox: takes up to $limit of one inbox owner's events that are due for their next run,
-- the same rule as sql/postgres/queries/claim_due_inbox.sql. $owner, $limit, $lease_ms, $retention_ms
-- or null (each key kept at least this long from now; null: as it is), $tokens (a JSON array of
-- proposed owner tokens, as many as $limit), $instance_id or null (null: the key's is kept).
-- It runs inside BEGIN IMMEDIATE: it holds the file's write lock from its read to its commit, so
-- concurrent claimers, in this process or others, take each due event once.
-- Every row it changed comes back; `claimed` is 0 for a dead-lettered one.
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
due as (
  select e.key,
         row_number() over (order by case when e.status = 'failed' then e.next_attempt_at else e.locked_until end, e.key) as position,
         e.attempts >= e.max_attempts
           or case when e.status = 'failed' then e.next_attempt_at else e.locked_until end > e.retry_until
           or e.inbox_item is null as exhausted
  from processed_events as e, clock as c
  where e.inbox_owner = $owner and e.inbox_owner is not null and e.dead_lettered_at is null and e.status <> 'completed'
    and ((e.status = 'failed' and e.next_attempt_at <= c.now) or (e.status = 'processing' and e.locked_until <= c.now))
  order by position
  limit $limit
),
tokens as (
  select key + 1 as position, value as token from json_each($tokens)
)
update processed_events as e set
  status = case when d.exhausted then 'failed' else 'processing' end,
  owner_token = case when d.exhausted then e.owner_token else t.token end,
  locked_until = case when d.exhausted then null else c.now + $lease_ms end,
  attempts = case when d.exhausted then e.attempts else min(e.attempts, 2147483646) + 1 end,
  next_attempt_at = null,
  dead_lettered_at = case when d.exhausted then c.now end,
  last_error = case when e.status = 'processing' then 'Its run ended without settling the key: its lease ran out.' else e.last_error end,
  execution_id = case when d.exhausted then e.execution_id end,
  n8n_instance = case when d.exhausted then e.n8n_instance else coalesce($instance_id, e.n8n_instance) end,
  expires_at = case when d.exhausted or $retention_ms is null then e.expires_at
    else max(coalesce(e.expires_at, 0), c.now + $retention_ms) end
from due as d
join tokens as t using (position), clock as c
where e.key = d.key
returning key, owner_token, locked_until, inbox_item, attempts, status = 'processing' as claimed;
