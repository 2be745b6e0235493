{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
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
) }}
