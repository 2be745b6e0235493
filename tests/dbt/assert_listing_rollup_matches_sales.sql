-- fct_listings' rolled-up tickets sold equal the tickets of fct_sales for live listings.
with

sold as (

    select
        listing_id,
        sum(qty_sold) as tickets_sold
    from {{ ref('fct_sales') }}
    group by listing_id

)

select
    listings.listing_id,
    listings.tickets_sold,
    sold.tickets_sold as tickets_in_sales
from {{ ref('fct_listings') }} as listings
left join sold on listings.listing_id = sold.listing_id
where listings.tickets_sold <> coalesce(sold.tickets_sold, 0)
