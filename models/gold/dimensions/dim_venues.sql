with

venues as (

    select * from {{ ref('venues') }}

),

states as (

    select * from {{ ref('us_states') }}

),

known_venues as (

    select
        venues.venue_id,
        venues.venue_name,
        venues.venue_city,
        venues.venue_state,
        states.state_name as venue_state_name,
        states.region as venue_region,
        states.time_zone as venue_time_zone,
        nullif(venues.venue_seats, 0) as venue_seats,
        false as is_unknown_member,
        venues.last_changed_at
    from venues
    left join states on venues.venue_state = states.state_code

),

unknown_member as (

    select
        {{ var('unknown_member_key') }} as venue_id,
        'Unknown venue' as venue_name,
        cast(null as string) as venue_city,
        cast(null as string) as venue_state,
        cast(null as string) as venue_state_name,
        cast(null as string) as venue_region,
        cast(null as string) as venue_time_zone,
        cast(null as int) as venue_seats,
        true as is_unknown_member,
        cast(null as timestamp) as last_changed_at

)

select * from known_venues
union all
select * from unknown_member
