-- Get Stats: the trigger's deliveries per answer in the hours that overlap the window, as
-- sql/postgres/queries/answer_counts.sql. $window_ms.
select answer, sum(count) as count
from processed_events_answer_counts
where hour > cast(round(unixepoch('subsec') * 1000) as integer) - $window_ms - 3600000
group by answer;
