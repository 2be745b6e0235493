{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
{{ cdc_state(
    ref('stg_ecomm__sales'),
    primary_key=['sale_id'],
    columns=[
        'sale_id',
        'listing_id',
        'seller_id',
        'buyer_id',
        'event_id',
        'date_id',
        'qty_sold',
        'price_paid',
        'commission',
        'sale_time',
    ],
) }}
