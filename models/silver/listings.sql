{#- Live listings: the latest state of every listing_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('listings_cdc_state'),
    columns=[
        'listing_id',
        'seller_id',
        'event_id',
        'date_id',
        'num_tickets',
        'price_per_ticket',
        'total_price',
        'list_time',
    ],
) }}
