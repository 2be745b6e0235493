{#-
  dbt-spark's alter_column_type, for Hudi tables: Hudi changes a column's type (a source
  column widened from int to bigint reaching a silver state table, whose models use
  `on_schema_change: sync_all_columns`) only with its schema-on-read enabled in the
  session; without it the ALTER fails ("ALTER TABLE CHANGE COLUMN is not supported").
  Other file formats keep dbt-spark's statement as it is.
-#}
{% macro spark__alter_column_type(relation, column_name, new_column_type) -%}
  {%- if config.get('file_format') == 'hudi' -%}
    {% call statement('hudi_schema_on_read') %}
      set hoodie.schema.on.read.enable = true
    {% endcall %}
  {%- endif -%}
  {% call statement('alter_column_type') %}
    alter table {{ relation }} alter column {{ column_name }} type {{ new_column_type }}
  {% endcall %}
{%- endmacro %}
