-- Get Stats, Answers Per Hour: the trigger's deliveries per hour and answer, as
-- sql/postgres/queries/answer_counts_by_hour.sql. $window_ms.
select hour, answer, count
from processed_events_answer_counts
where hour > cast(round(unixepoch('subsec') * 1000) as integer) - $window_ms - 3600000
order by hour, answer;
