with

sales as (

    select * from {{ ref('fct_sales') }}

),

per_buyer as (

    select
        buyer_id,
        max(buyer_username) as buyer_username,
        max(buyer_name) as buyer_name,
        max(buyer_state) as buyer_state,
        min(buyer_first_purchase_date) as first_purchase_date,
        count(*) as purchases_count,
        sum(qty_sold) as tickets_bought,
        sum(price_paid) as amount_spent
    from sales
    where buyer_id <> {{ var('unknown_member_key') }}
    group by buyer_id

),

ranked as (

    select
        *,
        rank() over (order by amount_spent desc) as spend_rank
    from per_buyer

)

select * from ranked
where spend_rank <= 100
