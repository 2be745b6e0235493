{#-
  Pre-hook of the snapshots: widen the snapshot table's columns whose column in the
  snapshot's relation (`source_relation`) the sources widened (int -> bigint, a
  decimal's precision at the same scale: the widenings of the ingestion's schema-change
  policy). dbt's snapshot adds new columns
  itself but keeps a column's first type, and its merge then fails casting a wider value
  into it ("[CAST_OVERFLOW] The value 5000000000L ... cannot be cast to INT"). The ALTER
  is dbt's alter_column_type (for Hudi: macros/hudi/spark__alter_column_type.sql). Does
  nothing before the first snapshot, or outside `dbt snapshot` and `dbt build`.
-#}
{% macro cdc_widen_columns(source_relation) -%}
  {%- if execute and flags.WHICH in ('snapshot', 'build') -%}
    {%- set target = load_relation(this) -%}
    {%- if target is not none -%}
      {%- set source_types = {} -%}
      {%- for column in adapter.get_columns_in_relation(source_relation) -%}
        {%- do source_types.update({column.name | lower: column.data_type | lower}) -%}
      {%- endfor -%}
      {%- for column in adapter.get_columns_in_relation(target) -%}
        {%- set current = column.data_type | lower -%}
        {%- set wider = source_types.get(column.name | lower) -%}
        {%- if wider is not none and cdc_is_widening(current, wider) -%}
          {%- do log('widening ' ~ target ~ '.' ~ column.name ~ ' from ' ~ current ~ ' to ' ~ wider, info=true) -%}
          {%- do alter_column_type(target, column.name, wider) -%}
        {%- endif -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#- Whether a column of type `current` may become `wider`: the ingestion's widenings
    (ingestion/cdc/schema_policy.py, `widens`). -#}
{% macro cdc_is_widening(current, wider) -%}
  {%- set decimal = modules.re.compile('^decimal\\((\\d+),(\\d+)\\)$') -%}
  {%- set old = decimal.match(current) -%}
  {%- set new = decimal.match(wider) -%}
  {%- if (current, wider) in [('int', 'bigint')] -%}
    {{ return(true) }}
  {%- elif old and new and old.group(2) == new.group(2) and (old.group(1) | int) < (new.group(1) | int) <= 38 -%}
    {{ return(true) }}
  {%- endif -%}
  {{ return(false) }}
{%- endmacro %}
