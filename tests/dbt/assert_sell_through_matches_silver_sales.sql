-- rpt_event_sell_through's tickets sold add up to the tickets of the live silver sales whose
-- listing is live (silver re-derived independently of the facts): returns a row if not.
with

report_totals as (

    select coalesce(sum(tickets_sold), 0) as tickets_sold
    from {{ ref('rpt_event_sell_through') }}

),

silver_totals as (

    select coalesce(sum(sales.qty_sold), 0) as tickets_sold
    from {{ ref('sales') }} as sales
    left semi join {{ ref('listings') }} as listings on sales.listing_id = listings.listing_id

)

select
    report_totals.tickets_sold as report_tickets_sold,
    silver_totals.tickets_sold as silver_tickets_sold
from report_totals
cross join silver_totals
where report_totals.tickets_sold <> silver_totals.tickets_sold
