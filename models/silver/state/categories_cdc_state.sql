{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state); the
    PostgreSQL string columns may arrive as Debezium's unchanged-TOAST placeholder. -#}
{#- A view: tens to thousands of keys, deduped at read for less than a Hudi merge costs
    (docs/performance.md, "Small entities as views"). -#}
{{ config(materialized='view') }}

{{ cdc_state(
    ref('stg_ems__categories'),
    primary_key=['category_id'],
    columns=[
        'category_id',
        'category_group',
        'category_name',
        'category_description',
    ],
    toastable_columns=[
        'category_group',
        'category_name',
        'category_description',
    ],
) }}
