with

listings as (

    select * from {{ ref('fct_listings') }}

),

per_event as (

    select
        event_id,
        max(event_name) as event_name,
        max(category_name) as category_name,
        max(venue_name) as venue_name,
        max(event_start_time) as event_start_time,
        count(*) as listings_count,
        sum(num_tickets) as tickets_listed,
        sum(tickets_sold) as tickets_sold,
        sum(revenue) as revenue
    from listings
    group by event_id

),

final as (

    select
        *,
        round(tickets_sold / nullif(tickets_listed, 0), 4) as sell_through
    from per_event

)

select * from final
