with

source as (

    select * from {{ source('ecomm', 'sale') }}

),

renamed as (

    select

        ----------  ids
        salesid as sale_id,
        listid as listing_id,
        sellerid as seller_id,
        buyerid as buyer_id,
        eventid as event_id,
        dateid as date_id,

        ----------  numerics
        qtysold as qty_sold,
        pricepaid as price_paid,
        commission,

        ----------  dates
        saletime as sale_time,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ecomm', 'sale') }}

    from source

)

select * from renamed
