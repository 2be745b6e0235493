{#-
  One row per live listing: its keys (resolved to dimension members), measures and dates.
  What a listing sold is not copied here: rpt_event_sell_through adds fct_sales up, so a
  sale changes one fact row, not two (a star schema, see fct_sales).

  Incremental as fct_sales (macros/incremental/fact_changes.sql).
-#}
{%- set members = {'seller_id': 'users_cdc_state', 'event_id': 'events_cdc_state', 'date_id': 'dates_cdc_state'} -%}
{%- set parents = [
    'listings_cdc_state', 'users_cdc_state', 'events_cdc_state', 'dates_cdc_state',
] -%}
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='listing_id',
    merge_delete_when='DBT_INTERNAL_SOURCE.is_removed',
    options=fact_table_options('listing_id'),
    pre_hook=[
        '{{ fact_record_parent_instants(' ~ parents ~ ') }}',
        '{{ fact_drop_candidates() }}',
        '{{ fact_stage_candidates(' ~ parents ~ ', "listing_id", "listings", ' ~ members ~ ') }}',
    ],
    post_hook=['reset {{ fact_parent_instants_key() }}', '{{ fact_drop_candidates() }}'],
) }}
{%- for parent in parents %}
-- depends_on: {{ ref(parent) }}
{%- endfor %}

with

listings as (

    select * from {{ ref('listings') }}

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

    select listing_id from {{ fact_candidates_relation() }}

),

in_scope as (

    select listings.*
    from listings
    left semi join candidates on listings.listing_id = candidates.listing_id

),

{%- endif %}

resolved as (

    select

        ----------  ids
        listings.listing_id,
        {{ member_key('sellers.user_id') }} as seller_id,
        {{ member_key('events.event_id') }} as event_id,
        {{ member_key('dates.date_id') }} as date_id,

        ----------  numerics
        listings.num_tickets,
        listings.price_per_ticket,
        listings.total_price,

        ----------  dates
        listings.list_time,
        to_date(listings.list_time) as list_date,
        listings.last_changed_at

    from {{ 'in_scope' if is_incremental() else 'listings' }} as listings
    left join users as sellers on listings.seller_id = sellers.user_id
    left join events on listings.event_id = events.event_id
    left join dates on listings.date_id = dates.date_id

)

{{ fact_final_select(
    ['listing_id', 'seller_id', 'event_id', 'date_id', 'num_tickets', 'price_per_ticket', 'total_price',
     'list_time', 'list_date', 'last_changed_at'],
    'listing_id',
    'resolved',
) }}
