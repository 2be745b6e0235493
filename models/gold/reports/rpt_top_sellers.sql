with

sales as (

    select * from {{ ref('fct_sales') }}

),

per_seller as (

    select
        seller_id,
        max(seller_username) as seller_username,
        max(seller_name) as seller_name,
        max(seller_state) as seller_state,
        count(*) as sales_count,
        sum(qty_sold) as tickets_sold,
        sum(price_paid) as revenue,
        sum(earnings) as earnings
    from sales
    where seller_id <> {{ var('unknown_member_key') }}
    group by seller_id

),

ranked as (

    select
        *,
        rank() over (order by earnings desc) as earnings_rank
    from per_seller

)

select * from ranked
where earnings_rank <= 100
