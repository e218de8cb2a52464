-- STUB
select null as key where $owner is null and $limit is null and $lease_ms is null and $retention_ms is null and $tokens is null and $instance_id is null;
