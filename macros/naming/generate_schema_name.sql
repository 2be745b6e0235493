{#-
  Schema of every node: the bare layer name (`staging`, `silver`, `gold`, `seeds`,
  `snapshots`) locally, and LAKEHOUSE_SCHEMA_PREFIX + layer on the `cluster` target so
  environments sharing one metastore stay apart. Nodes without a layer fall back to the
  target's schema.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema | trim }}
    {%- else -%}
        {{ schema_prefix() }}{{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}


{#- The schema prefix of the current target: LAKEHOUSE_SCHEMA_PREFIX on `cluster`, else empty. -#}
{% macro schema_prefix() -%}
    {%- if target.name == 'cluster' -%}
        {{ env_var('LAKEHOUSE_SCHEMA_PREFIX', '') }}
    {%- endif -%}
{%- endmacro %}

