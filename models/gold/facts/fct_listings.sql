with

listings as (

    select * from {{ ref('listings') }}

),

sales as (

    select * from {{ ref('sales') }}

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

users as (

    select * from {{ ref('dim_users') }}

),

dates as (

    select * from {{ ref('dim_dates') }}

),

sales_per_listing as (

    select
        listing_id,
        count(*) as sales_count,
        sum(qty_sold) as tickets_sold,
        sum(price_paid) as revenue,
        sum(commission) as commission
    from sales
    group by listing_id

),

listings_with_keys as (

    select
        listings.*,
        {{ member_key('events.event_id') }} as resolved_event_id,
        {{ member_key('sellers.user_id') }} as resolved_seller_id,
        {{ member_key('dates.date_id') }} as resolved_date_id,
        coalesce(events.venue_id, {{ var('unknown_member_key') }}) as resolved_venue_id,
        coalesce(events.category_id, {{ var('unknown_member_key') }}) as resolved_category_id
    from listings
    left join events on listings.event_id = events.event_id and not events.is_unknown_member
    left join
        users as sellers
        on listings.seller_id = sellers.user_id and not sellers.is_unknown_member
    left join dates on listings.date_id = dates.date_id and not dates.is_unknown_member

),

final as (

    select

        ----------  ids
        listings_with_keys.listing_id,
        listings_with_keys.resolved_seller_id as seller_id,
        listings_with_keys.resolved_event_id as event_id,
        listings_with_keys.resolved_venue_id as venue_id,
        listings_with_keys.resolved_category_id as category_id,
        listings_with_keys.resolved_date_id as date_id,

        ----------  strings
        dates.quarter,
        categories.category_group,
        categories.category_name,
        events.event_name,
        venues.venue_name,
        venues.venue_city,
        venues.venue_state,
        sellers.username as seller_username,
        sellers.full_name as seller_name,
        sellers.state as seller_state,

        ----------  numerics
        listings_with_keys.num_tickets,
        listings_with_keys.price_per_ticket,
        listings_with_keys.total_price,
        coalesce(sales_per_listing.sales_count, 0) as sales_count,
        coalesce(sales_per_listing.tickets_sold, 0) as tickets_sold,
        coalesce(sales_per_listing.revenue, 0) as revenue,
        coalesce(sales_per_listing.commission, 0) as commission,
        round(
            coalesce(sales_per_listing.tickets_sold, 0) / nullif(listings_with_keys.num_tickets, 0),
            4
        ) as sell_through,

        ----------  dates
        listings_with_keys.list_time,
        to_date(listings_with_keys.list_time) as list_date,
        events.start_time as event_start_time,
        listings_with_keys.last_changed_at

    from listings_with_keys
    left join sales_per_listing on listings_with_keys.listing_id = sales_per_listing.listing_id
    inner join events on listings_with_keys.resolved_event_id = events.event_id
    inner join venues on listings_with_keys.resolved_venue_id = venues.venue_id
    inner join categories on listings_with_keys.resolved_category_id = categories.category_id
    inner join users as sellers on listings_with_keys.resolved_seller_id = sellers.user_id
    inner join dates on listings_with_keys.resolved_date_id = dates.date_id

)

select * from final
