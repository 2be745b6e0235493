with

dates as (

    select * from {{ ref('dates') }}

),

inferred_dates as (

    -- days the facts name that silver does not hold (late, or deleted at the source)
    select fact_dates.date_id
    from (
        select date_id from {{ ref('fct_sales') }}
        union
        select date_id from {{ ref('fct_listings') }}
    ) as fact_dates
    left anti join dates on fact_dates.date_id = dates.date_id
    where fact_dates.date_id != {{ var('unknown_member_key') }}

),

known_dates as (

    select
        date_id,
        calendar_date,
        day_of_week,
        week_of_year,
        month_name,
        month(calendar_date) as month_number,
        quarter,
        year,
        is_holiday,
        dayofweek(calendar_date) in (1, 7) as is_weekend,
        false as is_unknown_member,
        false as is_inferred_member
    from dates

),

inferred_members as (

    select
        date_id,
        cast(null as date) as calendar_date,
        cast(null as string) as day_of_week,
        cast(null as int) as week_of_year,
        cast(null as string) as month_name,
        cast(null as int) as month_number,
        cast(null as string) as quarter,
        cast(null as int) as year,
        cast(null as boolean) as is_holiday,
        cast(null as boolean) as is_weekend,
        false as is_unknown_member,
        true as is_inferred_member
    from inferred_dates

),

unknown_member as (

    select
        {{ var('unknown_member_key') }} as date_id,
        cast(null as date) as calendar_date,
        cast(null as string) as day_of_week,
        cast(null as int) as week_of_year,
        cast(null as string) as month_name,
        cast(null as int) as month_number,
        cast(null as string) as quarter,
        cast(null as int) as year,
        cast(null as boolean) as is_holiday,
        cast(null as boolean) as is_weekend,
        true as is_unknown_member,
        false as is_inferred_member

)

select * from known_dates
union all
select * from inferred_members
union all
select * from unknown_member
