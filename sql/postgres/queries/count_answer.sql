-- Counts one delivery the Idempotent Webhook trigger answered (or started) in the current hour's
-- row of the counting table. $1 answer text. One short upsert, sent after the answer was written.
-- The hour is cut from the epoch, not with date_trunc, so sessions in other time zones share its row.
insert into processed_events_answer_counts as c (hour, answer, count)
values (to_timestamp(floor(extract(epoch from now()) / 3600) * 3600), $1, 1)
on conflict (hour, answer) do update set count = c.count + 1;
