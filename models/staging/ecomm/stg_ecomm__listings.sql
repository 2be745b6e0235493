with

source as (

    select * from {{ source('ecomm', 'listing') }}

),

renamed as (

    select

        ----------  ids
        listid as listing_id,
        sellerid as seller_id,
        eventid as event_id,
        dateid as date_id,

        ----------  numerics
        numtickets as num_tickets,
        priceperticket as price_per_ticket,
        totalprice as total_price,

        ----------  dates
        listtime as list_time,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ecomm', 'listing') }}

    from source

)

select * from renamed
