{#-
  dbt-spark's alter_relation_add_remove_columns, run as a statement that fetches nothing:
  dbt-spark runs the ALTER through run_query, which reads a result set, and Hudi's
  `ALTER TABLE ... ADD COLUMNS` returns none over the Thrift server ("'NoneType' object
  is not iterable" after the column was added). Columns are never dropped (Spark cannot),
  as in dbt-spark.
-#}
{% macro spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
  {%- if remove_columns -%}
    {{ exceptions.raise_compiler_error(
        relation ~ ': Apache Spark does not support dropping columns from tables ('
        ~ remove_columns | map(attribute='name') | join(', ') ~ '); rebuild it with --full-refresh') }}
  {%- endif -%}
  {%- if add_columns -%}
    {% call statement('alter_relation_add_remove_columns') %}
      alter {{ relation.type }} {{ relation }} add columns (
        {%- for column in add_columns %}
        {{ column.quoted }} {{ column.data_type }}{{ ',' if not loop.last }}
        {%- endfor %}
      )
    {% endcall %}
  {%- endif -%}
{% endmacro %}
