with

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

sales_with_keys as (

    select
        sales.*,
        {{ member_key('events.event_id') }} as resolved_event_id,
        {{ member_key('buyers.user_id') }} as resolved_buyer_id,
        {{ member_key('sellers.user_id') }} as resolved_seller_id,
        {{ member_key('dates.date_id') }} as resolved_date_id,
        coalesce(events.venue_id, {{ var('unknown_member_key') }}) as resolved_venue_id,
        coalesce(events.category_id, {{ var('unknown_member_key') }}) as resolved_category_id
    from sales
    left join events on sales.event_id = events.event_id and not events.is_unknown_member
    left join users as buyers on sales.buyer_id = buyers.user_id and not buyers.is_unknown_member
    left join
        users as sellers
        on sales.seller_id = sellers.user_id and not sellers.is_unknown_member
    left join dates on sales.date_id = dates.date_id and not dates.is_unknown_member

),

final as (

    select

        ----------  ids
        sales_with_keys.sale_id,
        sales_with_keys.listing_id,
        sales_with_keys.resolved_buyer_id as buyer_id,
        sales_with_keys.resolved_seller_id as seller_id,
        sales_with_keys.resolved_event_id as event_id,
        sales_with_keys.resolved_venue_id as venue_id,
        sales_with_keys.resolved_category_id as category_id,
        sales_with_keys.resolved_date_id as date_id,

        ----------  strings
        dates.quarter,
        categories.category_group,
        categories.category_name,
        events.event_name,
        venues.venue_name,
        venues.venue_city,
        venues.venue_state,
        buyers.username as buyer_username,
        buyers.full_name as buyer_name,
        buyers.state as buyer_state,
        sellers.username as seller_username,
        sellers.full_name as seller_name,
        sellers.state as seller_state,

        ----------  numerics
        round(sales_with_keys.price_paid / sales_with_keys.qty_sold, 2) as ticket_price,
        sales_with_keys.qty_sold,
        sales_with_keys.price_paid,
        round(sales_with_keys.commission / sales_with_keys.price_paid * 100, 2) as commission_prcnt,
        sales_with_keys.commission,
        sales_with_keys.price_paid - sales_with_keys.commission as earnings,

        ----------  dates
        sales_with_keys.sale_time,
        to_date(sales_with_keys.sale_time) as sale_date,
        buyers.first_purchase_date as buyer_first_purchase_date,
        sellers.first_sale_date as seller_first_sale_date,
        sales_with_keys.last_changed_at

    from sales_with_keys
    inner join events on sales_with_keys.resolved_event_id = events.event_id
    inner join venues on sales_with_keys.resolved_venue_id = venues.venue_id
    inner join categories on sales_with_keys.resolved_category_id = categories.category_id
    inner join users as buyers on sales_with_keys.resolved_buyer_id = buyers.user_id
    inner join users as sellers on sales_with_keys.resolved_seller_id = sellers.user_id
    inner join dates on sales_with_keys.resolved_date_id = dates.date_id

)

select * from final
