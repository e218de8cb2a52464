-- STUB
select null as key, null as owner_token where $items is null and $retry_cap_ms is null;
