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


{#- post-hook of a state model: record the newest bronze commit it now holds. -#}
{% macro record_cdc_watermark() -%}
    {%- set watermark = '' -%}
    {%- if execute -%}
        {%- set rows = run_query(
            "select coalesce(max(bronze_commit_time), '') from " ~ this).rows -%}
        {%- set watermark = rows[0][0] if rows else '' -%}
    {%- endif -%}
    alter table {{ this }} set tblproperties ('{{ cdc_watermark_property() }}' = '{{ watermark }}')
{%- endmacro %}
