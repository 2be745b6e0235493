with

dates as (

    select * from {{ ref('dates') }}

),

inferred_dates as (

    {{ inferred_member_keys(
        'date_id', 'dates', [[ref('fct_sales'), 'date_id'], [ref('fct_listings'), 'date_id']]
    ) }}

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
