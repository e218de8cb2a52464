-- Raises the version mark of a batch of objects in one statement (what Idempotency Order Guard sends).
-- $1 object keys text[] (each once), $2 versions numeric[], $3 event keys text[] (null: none),
-- $4 equal version counts as ('stale' | 'newer'), $5 n8n execution id, $6 workflow id.
--
-- For each object, against the row as it is when this statement gets its lock:
--   no row                                       -> insert: newer
--   version above the mark                       -> mark raised: newer
--   version equal to the mark, same event key    -> newer (the event that set it, retried after a failed run)
--   version equal to the mark, $4 = 'newer'      -> newer (the mark stays)
--   otherwise                                    -> stale (stale_count + 1; the mark stays)
-- Stale deliveries update the row too, so the returned row always says what this statement decided.
with batch as (
  select object_key, version, event_key
  from unnest($1::text[], $2::numeric[], $3::text[]) as b(object_key, version, event_key)
)
insert into object_versions as v (
  object_key, version, event_key, last_decision, stale_count, first_seen, updated_at, last_seen, execution_id, workflow_id
)
select object_key, version, event_key, 'newer', 0, now(), now(), now(), $5::text, $6::text
from batch
order by object_key
on conflict (object_key) do update set
  (version, event_key, last_decision, stale_count, updated_at, execution_id, workflow_id) = (
    select
      case when d.newer then excluded.version else v.version end,
      case when d.newer then excluded.event_key else v.event_key end,
      case when d.newer then 'newer' else 'stale' end,
      case when d.newer then v.stale_count else v.stale_count + 1 end,
      case when d.newer then now() else v.updated_at end,
      case when d.newer then excluded.execution_id else v.execution_id end,
      case when d.newer then excluded.workflow_id else v.workflow_id end
    from (
      select excluded.version > v.version
        or (excluded.version = v.version and (excluded.event_key = v.event_key or $4 = 'newer')) as newer
    ) as d
  ),
  last_seen = now()
returning
  v.object_key, v.version::text as version, v.event_key, v.last_decision, v.stale_count, v.first_seen, v.updated_at;
