{#-
  Compaction of a CDC state table on parquet: fold the delta layer into the base layer
  (base := the current state, see cdc_current_state) and drop the delta partition.
  Called by record_cdc_watermark when the delta holds more rows than
  var('silver_compaction_ratio') times the base layer.

  An interrupted compaction changes no published row: until the delta partition is
  dropped, each delta row and the copy the new base holds of it are equal, and the
  current-state rule keeps exactly one of them.
-#}
{% macro compact_cdc_state(relation) -%}
    {%- set columns = adapter.get_columns_in_relation(relation)
        | map(attribute='name') | reject('equalto', 'state_layer') | list -%}
    {%- do run_query('set spark.sql.sources.partitionOverwriteMode = DYNAMIC') -%}
    {%- do run_query(
        'insert overwrite table ' ~ relation ~ ' partition (state_layer) select '
        ~ columns | join(', ') ~ ", 'base' as state_layer from ("
        ~ cdc_current_state(relation) ~ ') as current_state') -%}
    {%- do run_query('alter table ' ~ relation ~ " drop if exists partition (state_layer = 'delta')") -%}
    {%- set rows = run_query('select count(*) from ' ~ relation).rows -%}
    {{ return(rows[0][0]) }}
{%- endmacro %}
