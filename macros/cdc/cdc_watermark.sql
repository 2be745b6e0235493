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


{#- Name of the table property holding the number of base-layer rows. -#}
{% macro cdc_base_rows_property() -%}
    {{ return('lakehouse.cdc_base_rows') }}
{%- endmacro %}


{#-
  post-hook of a state model: record the newest bronze commit it now holds, and on
  parquet compact the table when its delta layer has outgrown the base layer.

  After an incremental run on parquet only the delta layer changed and every base row
  comes from a commit at or before the previous watermark, so the new watermark is the
  larger of the previous one and the delta's newest commit: the base layer is not
  scanned. The base layer's row count is kept in a table property (set by full
  refreshes and compactions) for the compaction rule (var('silver_compaction_ratio')).
-#}
{% macro record_cdc_watermark() -%}
    {%- set watermark = '' -%}
    {%- set base_rows = 0 -%}
    {%- if execute -%}
        {%- set properties = {} -%}
        {%- for row in run_query('show tblproperties ' ~ this).rows -%}
            {%- do properties.update({row[0]: row[1]}) -%}
        {%- endfor -%}
        {%- set previous = properties.get(cdc_watermark_property(), '') -%}
        {%- set layered = previous != '' and var('table_format', 'parquet') != 'hudi' -%}
        {%- if layered -%}
            {%- set row = run_query(
                "select greatest('" ~ previous ~ "', coalesce(max(bronze_commit_time), '')), count(*) from "
                ~ this ~ " where state_layer = 'delta'").rows[0] -%}
            {%- set watermark = row[0] -%}
            {%- set delta_rows = row[1] -%}
            {%- set base_rows = properties.get(cdc_base_rows_property(), '0') | int -%}
            {%- if delta_rows > 0 and delta_rows > var('silver_compaction_ratio') * base_rows -%}
                {%- set base_rows = compact_cdc_state(this) -%}
                {%- do log(this ~ ': compacted ' ~ delta_rows ~ ' delta rows; base now ' ~ base_rows ~ ' rows',
                           info=True) -%}
            {%- endif -%}
        {%- else -%}
            {%- set row = run_query("select coalesce(max(bronze_commit_time), ''), count(*) from " ~ this).rows[0] -%}
            {%- set watermark = row[0] -%}
            {%- set base_rows = row[1] -%}
        {%- endif -%}
    {%- endif -%}
    alter table {{ this }} set tblproperties (
        '{{ cdc_watermark_property() }}' = '{{ watermark }}',
        '{{ cdc_base_rows_property() }}' = '{{ base_rows }}'
    )
{%- endmacro %}
