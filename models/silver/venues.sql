{#- Live venues: the latest state of every venue_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('venues_cdc_state'),
    columns=[
        'venue_id',
        'venue_name',
        'venue_city',
        'venue_state',
        'venue_seats',
    ],
) }}
