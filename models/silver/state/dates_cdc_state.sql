{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
{#- A view: tens to thousands of keys, deduped at read for less than a Hudi merge costs
    (docs/performance.md, "Small entities as views"). -#}
{{ config(materialized='view') }}

{{ cdc_state(
    ref('stg_ecomm__dates'),
    primary_key=['date_id'],
    columns=[
        'date_id',
        'calendar_date',
        'day_of_week',
        'week_of_year',
        'month_name',
        'quarter',
        'year',
        'is_holiday',
    ],
) }}
