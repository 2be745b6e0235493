-- Facts never lose or double rows: total revenue and tickets of fct_sales equal those of
-- silver sales (lookups that fail fall back to unknown members instead of dropping rows).
select
    silver_revenue,
    fact_revenue,
    silver_tickets,
    fact_tickets
from
    (
        select
            coalesce(sum(price_paid), 0) as silver_revenue,
            coalesce(sum(qty_sold), 0) as silver_tickets
        from {{ ref('sales') }}
    ) as silver
cross join
    (
        select
            coalesce(sum(price_paid), 0) as fact_revenue,
            coalesce(sum(qty_sold), 0) as fact_tickets
        from {{ ref('fct_sales') }}
    ) as facts
where silver_revenue <> fact_revenue or silver_tickets <> fact_tickets
