{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state); the
    PostgreSQL string columns may arrive as Debezium's unchanged-TOAST placeholder. -#}
{#- A view: tens to thousands of keys, deduped at read for less than a Hudi merge costs
    (docs/performance.md, "Small entities as views"). -#}
{{ config(materialized='view') }}

{{ cdc_state(
    ref('stg_ems__venues'),
    primary_key=['venue_id'],
    columns=[
        'venue_id',
        'venue_name',
        'venue_city',
        'venue_state',
        'venue_seats',
    ],
    toastable_columns=[
        'venue_name',
        'venue_city',
        'venue_state',
    ],
) }}
