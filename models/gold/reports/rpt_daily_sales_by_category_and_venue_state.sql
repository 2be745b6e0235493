with

sales as (

    select * from {{ ref('fct_sales') }}

),

daily as (

    select
        sale_date,
        category_group,
        category_name,
        coalesce(venue_state, 'unknown') as venue_state,
        count(*) as sales_count,
        sum(qty_sold) as tickets_sold,
        sum(price_paid) as revenue,
        sum(commission) as commission
    from sales
    group by sale_date, category_group, category_name, coalesce(venue_state, 'unknown')

)

select * from daily
