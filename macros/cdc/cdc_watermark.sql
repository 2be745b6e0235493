{#-
  Incremental watermarks of the silver CDC state models.

  A state model reads only staging rows whose `bronze_commit_time` is newer than its
  watermark, kept as the table property `lakehouse.cdc_watermark` of the state table
  itself. A post-hook sets it only after the model's main statement has succeeded: a run
  killed midway never advances it, and the next run re-reads the same bronze commits;
  reprocessing is idempotent because the dedupe is by source position. Keeping it in the
  table's own metadata (not in a shared table) means no two models ever write the same
  files, and a dropped or fully refreshed table starts from scratch with its watermark.
-#}

{#- Name of the table property holding the watermark. -#}
{% macro cdc_watermark_property() -%}
    {{ return('lakehouse.cdc_watermark') }}
{%- endmacro %}


{#- The watermark of `relation` as a SQL string literal ('' when none is recorded). -#}
{% macro cdc_watermark(relation) -%}
    {%- if not execute -%}
        {{ return("''") }}
    {%- endif -%}
    {%- set value = [] -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- if row[0] == cdc_watermark_property() -%}
            {%- do value.append(row[1]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set watermark = value[0] if value else '' -%}
    {%- if not modules.re.match('^[0-9]*$', watermark) -%}
        {%- do exceptions.raise_compiler_error(
            relation ~ ": table property " ~ cdc_watermark_property() ~ " is not a Hudi instant: " ~ watermark) -%}
    {%- endif -%}
    {{ return("'" ~ watermark ~ "'") }}
{%- endmacro %}


{#-
  post-hook of a state model: record the newest bronze commit it now holds. After an
  incremental run on parquet only the delta layer changed and every base row comes from
  a commit at or before the previous watermark, so the new watermark is the larger of
  the previous one and the delta's newest commit (no scan of the base layer).
-#}
{% macro record_cdc_watermark() -%}
    {%- set watermark = '' -%}
    {%- if execute -%}
        {%- set previous = cdc_watermark(this) -%}
        {%- if previous != "''" and var('table_format', 'parquet') != 'hudi' -%}
            {%- set query = "select greatest(" ~ previous ~ ", coalesce(max(bronze_commit_time), '')) from "
                ~ this ~ " where state_layer = 'delta'" -%}
        {%- else -%}
            {%- set query = "select coalesce(max(bronze_commit_time), '') from " ~ this -%}
        {%- endif -%}
        {%- set rows = run_query(query).rows -%}
        {%- set watermark = rows[0][0] if rows else '' -%}
    {%- endif -%}
    alter table {{ this }} set tblproperties ('{{ cdc_watermark_property() }}' = '{{ watermark }}')
{%- endmacro %}
