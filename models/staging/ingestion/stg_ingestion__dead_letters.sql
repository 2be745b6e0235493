with

source as (

    select * from {{ source('ingestion', 'dead_letter') }}

),

renamed as (

    select

        ----------  ids
        dead_letter_id,
        topic as kafka_topic,
        table_name,
        kafka_partition,
        kafka_offset,
        landing_file,

        ----------  strings
        reason,
        message,
        raw_line,

        ----------  booleans
        raw_is_base64,

        ----------  dates
        ingested_at as dead_lettered_at,
        _hoodie_commit_time as bronze_commit_time

    from source

)

select * from renamed
