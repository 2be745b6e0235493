with

listings as (

    select * from {{ ref('fct_listings') }}

),

sales as (

    select * from {{ ref('fct_sales') }}

),

events as (

    select * from {{ ref('dim_events') }}

),

venues as (

    select * from {{ ref('dim_venues') }}

),

categories as (

    select * from {{ ref('dim_categories') }}

),

sold_per_listing as (

    select
        listing_id,
        sum(qty_sold) as tickets_sold,
        sum(price_paid) as revenue
    from sales
    group by listing_id

),

per_event as (

    select
        listings.event_id,
        count(*) as listings_count,
        sum(listings.num_tickets) as tickets_listed,
        sum(coalesce(sold_per_listing.tickets_sold, 0)) as tickets_sold,
        sum(coalesce(sold_per_listing.revenue, 0)) as revenue
    from listings
    left join sold_per_listing on listings.listing_id = sold_per_listing.listing_id
    group by listings.event_id

),

final as (

    select
        per_event.event_id,
        events.event_name,
        categories.category_name,
        venues.venue_name,
        events.start_time as event_start_time,
        per_event.listings_count,
        per_event.tickets_listed,
        per_event.tickets_sold,
        per_event.revenue,
        round(per_event.tickets_sold / nullif(per_event.tickets_listed, 0), 4) as sell_through
    from per_event
    inner join events on per_event.event_id = events.event_id
    inner join venues on events.venue_id = venues.venue_id
    inner join categories on events.category_id = categories.category_id

)

select * from final
