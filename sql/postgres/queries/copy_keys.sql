-- copy_keys: carries key rows from an embedded store file into this table (the move to Postgres,
-- dist/scripts/move-keys-to-postgres.js). One statement per batch; per key, the copy further along
-- wins, compared as a row in this order:
--   1. completed beats processing and failed (its effect ran: a duplicate must see it);
--   2. more attempts (a later reservation of the key: each reclaim adds one);
--   3. seen more recently (the same reservation with more duplicates counted since).
-- Equal: Postgres keeps its row and nothing is written, so a second run changes nothing.
-- `before` reads the rows as they were, under lock, to say what each key's outcome was.
-- Each parameter is one column of the batch, in the order of the insert's column list; jsonb
-- travels as text[] (pg has no jsonb[] literal for text that is already JSON).
with incoming as (
  select * from unnest($1::text[], $2::text[], $3::integer[], $4::integer[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[], $9::uuid[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::timestamptz[], $17::timestamptz[], $18::text[], $19::text[], $20::integer[], $21::text[], $22::text[],
              $23::text[], $24::text[], $25::integer[], $26::integer[], $27::timestamptz[], $28::timestamptz[], $29::timestamptz[])
    as i(key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at, owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, response, completed_at, effect_completed_at, last_error, payload, payload_bytes, source, correlation_id,
         inbox_owner, inbox_item, first_retry_ms, max_attempts, retry_until, next_attempt_at, dead_lettered_at)
),
before as (
  select t.key, t.status, t.attempts, t.last_seen, t.owner_token from processed_events t
  where t.key in (select key from incoming) for update
),
written as (
  insert into processed_events as t (key, status, attempts, duplicate_count, first_seen, last_seen, locked_until, expires_at, owner_token, execution_id, workflow_id, n8n_instance, key_source, payload_hash, response, completed_at, effect_completed_at, last_error, payload, payload_bytes, source, correlation_id,
    inbox_owner, inbox_item, first_retry_ms, max_attempts, retry_until, next_attempt_at, dead_lettered_at)
  select i.key, i.status, i.attempts, i.duplicate_count, i.first_seen, i.last_seen, i.locked_until, i.expires_at, i.owner_token, i.execution_id, i.workflow_id, i.n8n_instance, i.key_source, i.payload_hash, i.response::jsonb, i.completed_at, i.effect_completed_at, i.last_error, i.payload::jsonb, i.payload_bytes, i.source, i.correlation_id,
    i.inbox_owner, i.inbox_item, i.first_retry_ms, i.max_attempts, i.retry_until, i.next_attempt_at, i.dead_lettered_at from incoming i
  on conflict (key) do update set
    status = excluded.status,
    attempts = excluded.attempts,
    duplicate_count = excluded.duplicate_count,
    first_seen = excluded.first_seen,
    last_seen = excluded.last_seen,
    locked_until = excluded.locked_until,
    expires_at = excluded.expires_at,
    owner_token = excluded.owner_token,
    execution_id = excluded.execution_id,
    workflow_id = excluded.workflow_id,
    n8n_instance = excluded.n8n_instance,
    key_source = excluded.key_source,
    payload_hash = excluded.payload_hash,
    response = excluded.response,
    completed_at = excluded.completed_at,
    effect_completed_at = excluded.effect_completed_at,
    last_error = excluded.last_error,
    payload = excluded.payload,
    payload_bytes = excluded.payload_bytes,
    source = excluded.source,
    correlation_id = excluded.correlation_id,
    inbox_owner = excluded.inbox_owner,
    inbox_item = excluded.inbox_item,
    first_retry_ms = excluded.first_retry_ms,
    max_attempts = excluded.max_attempts,
    retry_until = excluded.retry_until,
    next_attempt_at = excluded.next_attempt_at,
    dead_lettered_at = excluded.dead_lettered_at
  where (excluded.status = 'completed', excluded.attempts, excluded.last_seen) > (t.status = 'completed', t.attempts, t.last_seen)
  returning t.key
)
select i.key, b.status as before_status, b.attempts as before_attempts, b.last_seen as before_last_seen,
  b.owner_token::text as before_owner_token, (w.key is not null) as written
from incoming i left join before b on b.key = i.key left join written w on w.key = i.key
