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

        ----------  change metadata
        {{ cdc_metadata_columns() }}

    from source

)

select * from renamed
