with

sales as (

    select * from {{ ref('fct_sales') }}

),

monthly as (

    select
        cast(date_trunc('month', sale_time) as date) as sale_month,
        count(*) as sales_count,
        sum(qty_sold) as tickets_sold,
        sum(price_paid) as revenue,
        sum(commission) as commission,
        sum(earnings) as seller_earnings,
        round(sum(commission) / nullif(sum(price_paid), 0) * 100, 2) as commission_prcnt
    from sales
    group by cast(date_trunc('month', sale_time) as date)

)

select * from monthly
