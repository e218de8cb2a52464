-- STUB
select null as key where $execution_id is null and $workflow_id is null and $instance_id is null and $jitter is null and $retry_cap_ms is null;
