-- Release on error: deletes reservations so the provider's next delivery is processed.
-- $items: a JSON array of [key, owner token]. By hand, for one key:
--   delete from processed_events where key = '<key>';
-- A key its owner completed (effect_completed_at set) is never deleted: its business step ran, and
-- the next delivery would run it again. A Permanent-mode reservation (completed when reserved, not
-- by Complete) is released as the recipe's error path does.
-- An inbox event is never deleted: release_inbox.sql, run before this in the same transaction, has
-- failed it and scheduled its retry.
delete from processed_events
where effect_completed_at is null and inbox_owner is null
  and (key, owner_token) in (select value ->> 0, value ->> 1 from json_each($items))
returning key, owner_token;
