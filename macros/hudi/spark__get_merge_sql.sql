{#-
  dbt-spark's merge (dbt/include/spark/macros/materializations/incremental/strategies.sql,
  dbt-spark 1.11) with one addition: a model configured with `merge_delete_when` (a
  condition on the incoming rows, e.g. `DBT_INTERNAL_SOURCE.is_removed`) deletes the
  matched rows it holds for and never inserts them. The incremental gold facts hand the
  merge their changed rows and their removed rows in one relation
  (macros/incremental/fact_changes.sql). Without the config this renders dbt-spark's own
  statement. The update and insert lists name the target's columns, so the condition's
  column stays out of the table.

  The update clause comes first and carries the negated condition: Apache Hudi 1.2.0
  ignores a conditional delete clause that precedes an unconditional update (the rows are
  updated, not deleted; probed 2026-11-29) and honours this order.
  tests/dbt_project/test_gold_incremental.py fails if either behaviour changes (a removed
  sale must be gone, and counted as deleted in the fact's commit).
-#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
  {%- set delete_when = config.get('merge_delete_when') -%}
  {%- if not delete_when -%}
    {{ return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
  {%- endif -%}
  {%- set data_columns = [] -%}
  {%- for column in adapter.get_columns_in_relation(target) -%}
    {%- if not column.name.startswith('_hoodie_') -%}
      {%- do data_columns.append(column.quoted) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set keys = [unique_key] if unique_key is string else unique_key -%}
  {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
  {%- for key in keys -%}
    {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
  {%- endfor %}
  merge into {{ target }} as DBT_INTERNAL_DEST
      using {{ source }} as DBT_INTERNAL_SOURCE
      on {{ predicates | join(' and ') }}
      when matched and not ({{ delete_when }}) then update set
        {%- for column in data_columns %}
        {{ column }} = DBT_INTERNAL_SOURCE.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
      when matched and {{ delete_when }} then delete
      when not matched and not ({{ delete_when }}) then insert ({{ data_columns | join(', ') }})
        values ({% for column in data_columns %}DBT_INTERNAL_SOURCE.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}
