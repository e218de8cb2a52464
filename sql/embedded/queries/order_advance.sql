-- Raises the version mark of a batch of objects in one statement (what Idempotency Order Guard
-- sends), the same decisions as the Postgres store's sql/postgres/queries/order_advance.sql.
-- $items: a JSON array of [object key, version (exact decimal text), event key or null], each object
-- once; $equal ('stale' | 'newer'), $execution_id, $workflow_id.
-- Versions are compared by idempotency_compare_versions (the package's exact decimal comparison,
-- registered on the store's connection), never as floating point numbers.
--   no row                                       -> insert: newer
--   version above the mark                       -> mark raised: newer
--   version equal to the mark, same event key    -> newer (the event that set it, retried after a failed run)
--   version equal to the mark, $equal = 'newer'  -> newer (the mark stays)
--   otherwise                                    -> stale (stale_count + 1; the mark stays)
with clock(now) as (select cast(round(unixepoch('subsec') * 1000) as integer)),
items as (select value ->> 0 as object_key, value ->> 1 as version, value ->> 2 as event_key from json_each($items))
insert into object_versions as v (
  object_key, version, event_key, last_decision, stale_count, first_seen, updated_at, last_seen, execution_id, workflow_id
)
select i.object_key, i.version, i.event_key, 'newer', 0, c.now, c.now, c.now, $execution_id, $workflow_id
from items as i, clock as c
where true
on conflict (object_key) do update set
  version = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then excluded.version else v.version end,
  event_key = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then excluded.event_key else v.event_key end,
  last_decision = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then 'newer' else 'stale' end,
  stale_count = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then v.stale_count else v.stale_count + 1 end,
  updated_at = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then excluded.updated_at else v.updated_at end,
  execution_id = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then excluded.execution_id else v.execution_id end,
  workflow_id = case when idempotency_compare_versions(excluded.version, v.version) > 0
    or (idempotency_compare_versions(excluded.version, v.version) = 0 and (excluded.event_key = v.event_key or $equal = 'newer'))
    then excluded.workflow_id else v.workflow_id end,
  last_seen = excluded.last_seen
returning object_key, version, event_key, last_decision, stale_count, first_seen, updated_at;
