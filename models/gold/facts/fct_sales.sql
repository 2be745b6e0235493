{#-
  One row per live sale: its keys as the source gives them, measures and dates. Dimension
  attributes stay in the dimensions (a star schema), and a key names its member even when
  the member has not arrived or has gone (the dimension then holds an inferred member), so
  a fact row follows its own silver row alone: a run's writes follow the changed sales
  (models/gold/_gold__docs.md, "gold_incremental").

  Incremental (macros/incremental/fact_changes.sql): the sales whose state changed since
  the last run are recomputed from the state's new commits alone; the live ones merged,
  the others deleted. A truncate of sales recomputes every row.
-#}
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='sale_id',
    merge_delete_when='DBT_INTERNAL_SOURCE.is_removed',
    options=fact_table_options('sale_id'),
    pre_hook=['{{ fact_record_parent_instant("sales_cdc_state") }}'],
    post_hook=['reset {{ fact_parent_instant_key() }}'],
) }}
-- depends_on: {{ ref('sales_cdc_state') }}

with

{{ fact_source('sales_cdc_state', 'sale_id', 'sales') }},

final as (

    select

        ----------  ids
        sale_id,
        listing_id,
        {{ member_key('buyer_id') }} as buyer_id,
        {{ member_key('seller_id') }} as seller_id,
        {{ member_key('event_id') }} as event_id,
        {{ member_key('date_id') }} as date_id,

        ----------  numerics
        round(price_paid / qty_sold, 2) as ticket_price,
        qty_sold,
        price_paid,
        round(commission / price_paid * 100, 2) as commission_prcnt,
        commission,
        price_paid - commission as earnings,

        ----------  dates
        sale_time,
        to_date(sale_time) as sale_date,
        last_changed_at

    from sales

)

{{ fact_final_select(
    ['sale_id', 'listing_id', 'buyer_id', 'seller_id', 'event_id', 'date_id', 'ticket_price', 'qty_sold',
     'price_paid', 'commission_prcnt', 'commission', 'earnings', 'sale_time', 'sale_date', 'last_changed_at'],
    'sale_id',
    'final',
    'changed',
) }}
