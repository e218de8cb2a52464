-- One page of the keys table in key order, with every column moving the keys to Postgres carries
-- over (the owner token too: a processing key keeps its owner; an inbox event its item and retry
-- state). $after: the last key of the previous page ('' for the first); $limit: keys per page.
-- Every column, whatever the table's version: a file the nodes have not yet brought to keys
-- version 3 has no inbox columns, and its keys move without them (none is an inbox event).
select *
from processed_events
where key > $after
order by key
limit $limit;
