{#- Live sales: the latest state of every sale_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('sales_cdc_state'),
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
