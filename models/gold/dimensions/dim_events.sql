with

events as (

    select * from {{ ref('events') }}

),

venues as (

    select * from {{ ref('dim_venues') }}

),

categories as (

    select * from {{ ref('dim_categories') }}

),

dates as (

    select * from {{ ref('dim_dates') }}

),

inferred_events as (

    {{ inferred_member_keys(
        'event_id', 'events', [[ref('fct_sales'), 'event_id'], [ref('fct_listings'), 'event_id']]
    ) }}

),

known_events as (

    select
        events.event_id,
        {{ member_key('venues.venue_id') }} as venue_id,
        {{ member_key('categories.category_id') }} as category_id,
        {{ member_key('dates.date_id') }} as date_id,
        events.event_name,
        events.start_time,
        to_date(events.start_time) as start_date,
        false as is_unknown_member,
        false as is_inferred_member,
        events.last_changed_at
    from events
    left join venues on events.venue_id = venues.venue_id and not venues.is_unknown_member
    left join
        categories
        on events.category_id = categories.category_id and not categories.is_unknown_member
    left join dates on events.date_id = dates.date_id and not dates.is_unknown_member

),

inferred_members as (

    select
        event_id,
        {{ var('unknown_member_key') }} as venue_id,
        {{ var('unknown_member_key') }} as category_id,
        {{ var('unknown_member_key') }} as date_id,
        'Unknown event' as event_name,
        cast(null as timestamp) as start_time,
        cast(null as date) as start_date,
        false as is_unknown_member,
        true as is_inferred_member,
        cast(null as timestamp) as last_changed_at
    from inferred_events

),

unknown_member as (

    select
        {{ var('unknown_member_key') }} as event_id,
        {{ var('unknown_member_key') }} as venue_id,
        {{ var('unknown_member_key') }} as category_id,
        {{ var('unknown_member_key') }} as date_id,
        'Unknown event' as event_name,
        cast(null as timestamp) as start_time,
        cast(null as date) as start_date,
        true as is_unknown_member,
        false as is_inferred_member,
        cast(null as timestamp) as last_changed_at

)

select * from known_events
union all
select * from inferred_members
union all
select * from unknown_member
