-- SCD2 invariant: at most one open version (dbt_valid_to is null) per key.
select
    'users_history' as snapshot_name,
    user_id as key_value,
    count(*) as open_versions
from {{ ref('users_history') }}
where dbt_valid_to is null
group by user_id
having count(*) > 1

union all

select
    'venues_history' as snapshot_name,
    venue_id as key_value,
    count(*) as open_versions
from {{ ref('venues_history') }}
where dbt_valid_to is null
group by venue_id
having count(*) > 1
