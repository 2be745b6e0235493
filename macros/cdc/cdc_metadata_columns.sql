{#-
  The renamed change-metadata columns every staging model exposes, in one place so the
  seven staging models stay identical. `_hoodie_commit_time` becomes `bronze_commit_time`
  (the incremental watermark); the other `_hoodie_*` columns stop at staging.

  `cdc_order` is what orders the events of one key (docs/architecture.md, "Ordering"):
  the Kafka offset in the key's partition, zero-padded to 20 digits so it sorts as a
  string. Debezium guarantees per-key order only as Kafka order: a PostgreSQL
  transaction open across the snapshot streams after the snapshot rows with lower
  LSNs. Truncates have no key and land in any partition, so they keep their source
  position (they are compared only with other truncates and, for liveness, by
  `cdc_position`).

  Given the model's source (`source_name`, `table_name`), the columns the source added
  beyond its YAML follow, under their source names (macros/cdc/cdc_added_columns.sql).
-#}
{% macro cdc_metadata_columns(source_name=none, table_name=none) -%}
        _cdc_op as cdc_op,
        (_cdc_op = 'd' or coalesce(_cdc_is_deleted, false)) as is_deleted,
        (_cdc_op = 't') as is_truncate,
        _cdc_position as cdc_position,
        case
            when _cdc_op = 't' then _cdc_position
            else lpad(cast(_cdc_kafka_offset as string), 20, '0')
        end as cdc_order,
        _cdc_source_ts as cdc_source_ts,
        _cdc_tx_id as cdc_tx_id,
        _cdc_source_db as cdc_source_db,
        _cdc_source_table as cdc_source_table,
        _cdc_topic as kafka_topic,
        _cdc_kafka_partition as kafka_partition,
        _cdc_kafka_offset as kafka_offset,
        _cdc_landing_file as landing_file,
        _cdc_ingested_at as ingested_at,
        _cdc_source_date as source_date,
        _hoodie_commit_time as bronze_commit_time
        {%- if source_name is not none -%}
            {{ cdc_added_source_columns(source_name, table_name) }}
        {%- endif -%}
{%- endmacro %}


{#- Names of the change-metadata columns of a staging model (see cdc_metadata_columns). -#}
{% macro cdc_metadata_column_names() -%}
    {{ return([
        'cdc_op', 'is_deleted', 'is_truncate', 'cdc_position', 'cdc_order', 'cdc_source_ts', 'cdc_tx_id',
        'cdc_source_db', 'cdc_source_table', 'kafka_topic', 'kafka_partition', 'kafka_offset',
        'landing_file', 'ingested_at', 'source_date', 'bronze_commit_time',
    ]) }}
{%- endmacro %}
