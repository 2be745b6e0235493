with

source as (

    select * from {{ source('ems', 'category') }}

),

renamed as (

    select

        ----------  ids
        catid as category_id,

        ----------  strings
        catgroup as category_group,
        catname as category_name,
        catdesc as category_description,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ems', 'category') }}

    from source

)

select * from renamed
