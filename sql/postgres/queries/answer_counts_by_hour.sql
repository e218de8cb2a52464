-- Get Stats, Answers Per Hour: the trigger's deliveries per hour and answer, in the hours that
-- overlap the window (as answer_counts.sql), oldest hour first. $1 window seconds. An hour with no
-- delivery has no row.
select hour, answer, count::bigint as count
from processed_events_answer_counts
where hour > now() - make_interval(secs => $1::double precision) - interval '1 hour'
order by hour, answer;
