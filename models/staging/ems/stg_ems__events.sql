with

source as (

    select * from {{ source('ems', 'event') }}

),

renamed as (

    select

        ----------  ids
        eventid as event_id,
        venueid as venue_id,
        catid as category_id,
        dateid as date_id,

        ----------  strings
        eventname as event_name,

        ----------  dates
        starttime as start_time,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ems', 'event') }}

    from source

)

select * from renamed
