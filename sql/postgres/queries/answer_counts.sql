-- Get Stats: the trigger's deliveries per answer in the hours that overlap the window. $1 window
-- seconds. Counted per hour, so the first hour of the window is counted whole.
select answer, sum(count)::bigint as count
from processed_events_answer_counts
where hour > now() - make_interval(secs => $1::double precision) - interval '1 hour'
group by answer;
