{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
{{ cdc_state(
    ref('stg_ecomm__listings'),
    primary_key=['listing_id'],
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
