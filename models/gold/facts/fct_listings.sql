{#-
  One row per live listing: its keys as the source gives them, measures and dates. What a
  listing sold is not copied here: rpt_event_sell_through adds fct_sales up, so a sale
  changes one fact row, not two (a star schema, see fct_sales).

  Incremental as fct_sales (macros/incremental/fact_changes.sql).
-#}
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='listing_id',
    merge_delete_when='DBT_INTERNAL_SOURCE.is_removed',
    options=fact_table_options('listing_id'),
    pre_hook=['{{ fact_record_parent_instant("listings_cdc_state") }}'],
    post_hook=['reset {{ fact_parent_instant_key() }}'],
) }}
-- depends_on: {{ ref('listings_cdc_state') }}

with

{{ fact_source('listings_cdc_state', 'listing_id', 'listings') }},

final as (

    select

        ----------  ids
        listing_id,
        {{ member_key('seller_id') }} as seller_id,
        {{ member_key('event_id') }} as event_id,
        {{ member_key('date_id') }} as date_id,

        ----------  numerics
        num_tickets,
        price_per_ticket,
        total_price,

        ----------  dates
        list_time,
        to_date(list_time) as list_date,
        last_changed_at

    from listings

)

{{ fact_final_select(
    ['listing_id', 'seller_id', 'event_id', 'date_id', 'num_tickets', 'price_per_ticket', 'total_price',
     'list_time', 'list_date', 'last_changed_at'],
    'listing_id',
    'final',
    'changed',
) }}
