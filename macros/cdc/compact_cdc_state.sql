{#-
  pre-hook of the CDC state models on parquet: when the delta layer holds more rows than
  var('silver_compaction_ratio') times the base layer, fold it into the base layer
  (base := the current state, see cdc_current_state) and drop the delta partition.

  It runs before the model's main statement, which then starts from an empty delta. An
  interrupted compaction changes no published row: until the delta partition is
  dropped, each delta row equals the copy the new base holds of it.
-#}
{% macro compact_cdc_state() -%}
    {%- if execute and is_incremental() and var('table_format', 'parquet') != 'hudi' -%}
        {%- set rows_per_layer = {} -%}
        {%- for row in run_query('select state_layer, count(*) from ' ~ this ~ ' group by state_layer').rows -%}
            {%- do rows_per_layer.update({row[0]: row[1]}) -%}
        {%- endfor -%}
        {%- set base_rows = rows_per_layer.get('base', 0) -%}
        {%- set delta_rows = rows_per_layer.get('delta', 0) -%}
        {%- if delta_rows > 0 and delta_rows > var('silver_compaction_ratio') * base_rows -%}
            {%- set columns = adapter.get_columns_in_relation(this)
                | map(attribute='name') | reject('equalto', 'state_layer') | list -%}
            {%- do run_query('set spark.sql.sources.partitionOverwriteMode = DYNAMIC') -%}
            {%- do run_query(
                'insert overwrite table ' ~ this ~ ' partition (state_layer) select '
                ~ columns | join(', ') ~ ", 'base' as state_layer from ("
                ~ cdc_current_state(this) ~ ') as current_state') -%}
            {%- do run_query('alter table ' ~ this ~ " drop if exists partition (state_layer = 'delta')") -%}
            {%- do log(this ~ ': compacted ' ~ delta_rows ~ ' delta rows into ' ~ base_rows ~ ' base rows',
                       info=True) -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
