-- Time travel on the SCD2 snapshot: every user as it was at a point in time.
-- `dbt compile -s user_state_as_of --vars '{as_of: "2008-06-30 00:00:00"}'`.
select *
from {{ ref('users_history') }}
where dbt_valid_from <= timestamp '{{ var("as_of", "2008-06-30 00:00:00") }}'
    and (
        dbt_valid_to is null or dbt_valid_to > timestamp '{{ var("as_of", "2008-06-30 00:00:00") }}'
    )
