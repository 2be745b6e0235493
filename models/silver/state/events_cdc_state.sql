{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state); the
    PostgreSQL string columns may arrive as Debezium's unchanged-TOAST placeholder. -#}
{{ cdc_state(
    ref('stg_ems__events'),
    primary_key=['event_id'],
    columns=[
        'event_id',
        'venue_id',
        'category_id',
        'date_id',
        'event_name',
        'start_time',
    ],
    toastable_columns=[
        'event_name',
    ],
) }}
