{#- Live events: the latest state of every event_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('events_cdc_state'),
    columns=[
        'event_id',
        'venue_id',
        'category_id',
        'date_id',
        'event_name',
        'start_time',
    ],
) }}
