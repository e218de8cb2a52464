-- STUB
select null::text as key, null::uuid as owner_token, null::timestamptz as locked_until, null::text as inbox_item, null::integer as attempts where false and $1::text is null and $2::integer is null and $3::bigint is null and $4::double precision is null and $5::uuid[] is null and $6::text is null;
