-- Release on error: deletes reservations so the provider's next delivery is processed.
-- $1 keys text[], $2 owner tokens uuid[]. By hand, for one key (the seed's error path):
--   delete from processed_events where key = '<key>';
delete from processed_events as e
using unnest($1::text[], $2::uuid[]) as b(key, owner_token)
where e.key = b.key and e.owner_token = b.owner_token
returning e.key;
