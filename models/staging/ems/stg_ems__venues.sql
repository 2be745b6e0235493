with

source as (

    select * from {{ source('ems', 'venue') }}

),

renamed as (

    select

        ----------  ids
        venueid as venue_id,

        ----------  strings
        venuename as venue_name,
        venuecity as venue_city,
        venuestate as venue_state,

        ----------  numerics
        venueseats as venue_seats,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ems', 'venue') }}

    from source

)

select * from renamed
