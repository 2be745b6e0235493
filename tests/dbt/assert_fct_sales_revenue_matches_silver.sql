-- Facts never lose or double rows: total revenue and tickets of fct_sales equal those of
-- silver sales (lookups that fail fall back to unknown members instead of dropping rows).
with

silver_totals as (

    select
        coalesce(sum(price_paid), 0) as revenue,
        coalesce(sum(qty_sold), 0) as tickets
    from {{ ref('sales') }}

),

fact_totals as (

    select
        coalesce(sum(price_paid), 0) as revenue,
        coalesce(sum(qty_sold), 0) as tickets
    from {{ ref('fct_sales') }}

)

select
    silver_totals.revenue as silver_revenue,
    fact_totals.revenue as fact_revenue,
    silver_totals.tickets as silver_tickets,
    fact_totals.tickets as fact_tickets
from silver_totals
cross join fact_totals
where
    silver_totals.revenue <> fact_totals.revenue
    or silver_totals.tickets <> fact_totals.tickets
