-- Release on error: deletes reservations so the provider's next delivery is processed.
-- $1 keys text[], $2 owner tokens uuid[], $3 jitter factors float8[] (one per key, inboxJitter),
-- $4 the longest retry delay in milliseconds (INBOX_RETRY_CAP_MS). By hand, for one key (the seed's
-- error path):
--   delete from processed_events where key = '<key>';
-- A key its owner completed (effect_completed_at set) is never deleted: its business step ran, and
-- the next delivery would run it again. A Permanent-mode reservation (completed when reserved, not
-- by Complete) is released as the recipe's error path does.
-- An inbox event is never deleted: its kept item is the only copy of the event, and no delivery
-- brings it back (every one is a duplicate). It is failed as fail.sql fails it, its next retry
-- scheduled or the event dead-lettered (the same <inbox-retry> block).
-- The rows are locked first, in the keys' byte order (collate "C", the order reserve.sql and
-- claim_for_replay.sql take them in), so a settle and a redelivered batch of the same keys never
-- deadlock; the delete and the update then change only rows this statement holds.
with mine as (
  select e.key, b.owner_token, e.inbox_owner is not null as inbox, r.retry, r.due
  from processed_events as e
  join unnest($1::text[], $2::uuid[], $3::double precision[]) as b(key, owner_token, jitter) on b.key = e.key
  cross join (select $4::double precision as retry_cap_ms) as c
  -- <inbox-retry>
  cross join lateral (
    select d.due, e.inbox_owner is not null and e.dead_lettered_at is null and e.attempts < e.max_attempts and d.due <= e.retry_until as retry
    from (
      select now() + least(c.retry_cap_ms, e.first_retry_ms * (1::bigint << least(greatest(e.attempts - 1, 0), 30))) * b.jitter
        * interval '1 millisecond' as due
    ) as d
  ) as r
  -- </inbox-retry>
  where e.owner_token = b.owner_token and e.effect_completed_at is null
  order by e.key collate "C"
  for update of e
),
released as (
  delete from processed_events as e
  using mine as m
  where e.key = m.key and e.owner_token = m.owner_token and e.effect_completed_at is null and not m.inbox
  returning e.key, e.owner_token
),
retried as (
  update processed_events as e set
    status = 'failed',
    locked_until = null,
    last_error = 'Its run released the key (Release).',
    next_attempt_at = case when m.retry then m.due end,
    dead_lettered_at = case when m.retry then null else coalesce(e.dead_lettered_at, now()) end
  from mine as m
  where e.key = m.key and e.owner_token = m.owner_token and e.effect_completed_at is null and m.inbox
  returning e.key, e.owner_token
)
select key, owner_token from released
union all
select key, owner_token from retried;
