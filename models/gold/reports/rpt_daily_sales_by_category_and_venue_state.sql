with

sales as (

    select * from {{ ref('fct_sales') }}

),

events as (

    select * from {{ ref('dim_events') }}

),

venues as (

    select * from {{ ref('dim_venues') }}

),

categories as (

    select * from {{ ref('dim_categories') }}

),

daily as (

    select
        sales.sale_date,
        categories.category_group,
        categories.category_name,
        coalesce(venues.venue_state, 'unknown') as venue_state,
        count(*) as sales_count,
        sum(sales.qty_sold) as tickets_sold,
        sum(sales.price_paid) as revenue,
        sum(sales.commission) as commission
    from sales
    inner join events on sales.event_id = events.event_id
    inner join venues on events.venue_id = venues.venue_id
    inner join categories on events.category_id = categories.category_id
    group by
        sales.sale_date,
        categories.category_group,
        categories.category_name,
        coalesce(venues.venue_state, 'unknown')

)

select * from daily
