-- From the reference TICKIT project: every sale has a positive price paid, a positive
-- ticket price and a non-negative commission.
select
    sale_id,
    price_paid,
    ticket_price,
    commission
from {{ ref('fct_sales') }}
where price_paid <= 0 or ticket_price <= 0 or commission < 0
