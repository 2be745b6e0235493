with

source as (

    select * from {{ source('ingestion', 'schema_change') }}

),

renamed as (

    select

        ----------  ids
        schema_change_id,
        table_name,
        schema_version,
        column_name,
        first_topic as first_kafka_topic,
        first_kafka_partition,
        first_kafka_offset,
        first_landing_file,

        ----------  strings
        change as change_kind,
        from_type,
        to_type,

        ----------  dates
        first_source_ts as first_seen_at,
        recorded_at,
        _hoodie_commit_time as bronze_commit_time

    from source

)

select * from renamed
