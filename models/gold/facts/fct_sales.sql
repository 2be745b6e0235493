{#-
  One row per live sale: its keys (resolved to dimension members), measures and dates.
  Dimension attributes stay in the dimensions (a star schema): a rename of a category or
  an event, or a user's move, changes one dimension row and no fact row, so a run's writes
  follow the changed sales (docs/architecture.md, "Incremental gold").

  Incremental (macros/incremental/fact_changes.sql): the sales whose state changed since
  the last run and those pointing at a user, event or date whose state changed are
  recomputed; the rows that differ from the stored ones are merged, the ones no longer
  live deleted. A truncate of any parent recomputes every row.
-#}
{%- set members = {'buyer_id': 'users_cdc_state', 'seller_id': 'users_cdc_state', 'event_id': 'events_cdc_state', 'date_id': 'dates_cdc_state'} -%}
{%- set parents = ['sales_cdc_state', 'users_cdc_state', 'events_cdc_state', 'dates_cdc_state'] -%}
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='sale_id',
    merge_delete_when='DBT_INTERNAL_SOURCE.is_removed',
    options=fact_table_options('sale_id'),
    pre_hook=[
        '{{ fact_record_parent_instants(' ~ parents ~ ') }}',
        '{{ fact_drop_candidates() }}',
        '{{ fact_stage_candidates(' ~ parents ~ ', "sale_id", "sales", ' ~ members ~ ') }}',
    ],
    post_hook=['reset {{ fact_parent_instants_key() }}', '{{ fact_drop_candidates() }}'],
) }}
{%- for parent in parents %}
-- depends_on: {{ ref(parent) }}
{%- endfor %}

with

sales as (

    select * from {{ ref('sales') }}

),

users as (

    select * from {{ ref('users') }}

),

events as (

    select * from {{ ref('events') }}

),

dates as (

    select * from {{ ref('dates') }}

),

{%- if is_incremental() %}

candidates as (

    select sale_id from {{ fact_candidates_relation() }}

),

in_scope as (

    select sales.*
    from sales
    left semi join candidates on sales.sale_id = candidates.sale_id

),

{%- endif %}

resolved as (

    select

        ----------  ids
        sales.sale_id,
        sales.listing_id,
        {{ member_key('buyers.user_id') }} as buyer_id,
        {{ member_key('sellers.user_id') }} as seller_id,
        {{ member_key('events.event_id') }} as event_id,
        {{ member_key('dates.date_id') }} as date_id,

        ----------  numerics
        round(sales.price_paid / sales.qty_sold, 2) as ticket_price,
        sales.qty_sold,
        sales.price_paid,
        round(sales.commission / sales.price_paid * 100, 2) as commission_prcnt,
        sales.commission,
        sales.price_paid - sales.commission as earnings,

        ----------  dates
        sales.sale_time,
        to_date(sales.sale_time) as sale_date,
        sales.last_changed_at

    from {{ 'in_scope' if is_incremental() else 'sales' }} as sales
    left join users as buyers on sales.buyer_id = buyers.user_id
    left join users as sellers on sales.seller_id = sellers.user_id
    left join events on sales.event_id = events.event_id
    left join dates on sales.date_id = dates.date_id

)

{{ fact_final_select(
    ['sale_id', 'listing_id', 'buyer_id', 'seller_id', 'event_id', 'date_id', 'ticket_price', 'qty_sold',
     'price_paid', 'commission_prcnt', 'commission', 'earnings', 'sale_time', 'sale_date', 'last_changed_at'],
    'sale_id',
    'resolved',
) }}
