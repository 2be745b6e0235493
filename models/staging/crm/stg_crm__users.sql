with

source as (

    select * from {{ source('crm', 'user') }}

),

renamed as (

    select

        ----------  ids
        userid as user_id,

        ----------  strings
        username,
        firstname as first_name,
        lastname as last_name,
        city,
        state,
        email,
        phone,

        ----------  booleans
        likesports as likes_sports,
        liketheatre as likes_theatre,
        likeconcerts as likes_concerts,
        likejazz as likes_jazz,
        likeclassical as likes_classical,
        likeopera as likes_opera,
        likerock as likes_rock,
        likevegas as likes_vegas,
        likebroadway as likes_broadway,
        likemusicals as likes_musicals,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('crm', 'user') }}

    from source

)

select * from renamed
