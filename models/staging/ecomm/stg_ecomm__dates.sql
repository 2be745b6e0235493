with

source as (

    select * from {{ source('ecomm', 'date') }}

),

renamed as (

    select

        ----------  ids
        dateid as date_id,

        ----------  strings
        day as day_of_week,
        month as month_name,
        qtr as quarter,

        ----------  numerics
        week as week_of_year,
        year,

        ----------  booleans
        holiday as is_holiday,

        ----------  dates
        caldate as calendar_date,

        ----------  change metadata, then the columns the source added
        {{ cdc_metadata_columns('ecomm', 'date') }}

    from source

)

select * from renamed
