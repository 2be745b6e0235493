with

sales as (

    select * from {{ ref('fct_sales') }}

),

users as (

    select * from {{ ref('dim_users') }}

),

per_buyer as (

    select
        buyer_id,
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

),

final as (

    select
        ranked.buyer_id,
        users.username as buyer_username,
        users.full_name as buyer_name,
        users.state as buyer_state,
        users.first_purchase_date,
        ranked.purchases_count,
        ranked.tickets_bought,
        ranked.amount_spent,
        ranked.spend_rank
    from ranked
    inner join users on ranked.buyer_id = users.user_id
    where ranked.spend_rank <= 100

)

select * from final
