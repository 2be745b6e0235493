with

source as (

    select * from {{ source('ingestion', 'dead_letter') }}

),

renamed as (

    select

        ----------  ids
        topic as kafka_topic,
        kafka_partition,
        kafka_offset,
        landing_file,

        ----------  strings
        reason,
        message,
        raw_line,

        ----------  dates
        dead_lettered_at,
        _hoodie_commit_time as bronze_commit_time

    from source

)

select * from renamed
