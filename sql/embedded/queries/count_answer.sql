-- Counts one delivery the Idempotent Webhook trigger answered (or started) in the current hour's
-- row, as sql/postgres/queries/count_answer.sql does. $answer.
insert into processed_events_answer_counts as c (hour, answer, count)
values ((cast(unixepoch('subsec') * 1000 as integer) / 3600000) * 3600000, $answer, 1)
on conflict (hour, answer) do update set count = c.count + 1;
