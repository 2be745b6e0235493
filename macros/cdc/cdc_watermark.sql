{#-
  Incremental watermarks of the silver CDC state models.

  A state model reads only staging rows whose `bronze_commit_time` is newer than its
  watermark, and records its new watermark in a post-hook, i.e. only after its main
  statement has succeeded. A run killed midway therefore never advances the watermark:
  the next run re-reads the same bronze commits, and because the dedupe is by source
  position, reprocessing is idempotent. The table is append-only; the watermark of a
  model is the largest value recorded for it.
-#}

{#- Relation of the watermark table (in the silver schema). -#}
{% macro cdc_watermarks_relation() -%}
    {{ return(api.Relation.create(
        database=none,
        schema=generate_schema_name('silver', none) | trim,
        identifier='cdc_watermarks',
        type='table',
    )) }}
{%- endmacro %}


{#- on-run-start: create the silver schema and the watermark table when missing. -#}
{% macro create_cdc_watermarks_table() -%}
    {%- if execute -%}
        {%- set relation = cdc_watermarks_relation() -%}
        {%- do run_query('create schema if not exists ' ~ relation.schema) -%}
        {%- do run_query(
            'create table if not exists ' ~ relation ~ ' ('
            ~ 'model_name string, watermark string, recorded_at timestamp, invocation_id string'
            ~ ') using parquet'
        ) -%}
    {%- endif -%}
{%- endmacro %}


{#- A SQL expression: the watermark of `model_name` ('' when none was recorded). -#}
{% macro cdc_watermark(model_name) -%}
    (select coalesce(max(watermark), '') from {{ cdc_watermarks_relation() }}
     where model_name = '{{ model_name }}')
{%- endmacro %}


{#- post-hook of a state model: record the newest bronze commit it now holds. -#}
{% macro record_cdc_watermark() -%}
    insert into {{ cdc_watermarks_relation() }}
    select
        '{{ this.identifier }}' as model_name,
        coalesce(max(bronze_commit_time), '') as watermark,
        current_timestamp() as recorded_at,
        '{{ invocation_id }}' as invocation_id
    from {{ this }}
{%- endmacro %}
