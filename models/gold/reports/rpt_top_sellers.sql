with

sales as (

    select * from {{ ref('fct_sales') }}

),

users as (

    select * from {{ ref('dim_users') }}

),

per_seller as (

    select
        seller_id,
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

),

final as (

    select
        ranked.seller_id,
        users.username as seller_username,
        users.full_name as seller_name,
        users.state as seller_state,
        ranked.sales_count,
        ranked.tickets_sold,
        ranked.revenue,
        ranked.earnings,
        ranked.earnings_rank
    from ranked
    inner join users on ranked.seller_id = users.user_id
    where ranked.earnings_rank <= 100

)

select * from final
