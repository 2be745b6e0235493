{#-
  Row counts and sizes for the docs site: `analyze table ... compute statistics` on every
  table the project builds (models materialized as table or incremental, snapshots,
  seeds) that exists. Run by `lakehouse docs build` before `dbt docs generate`, so the
  catalog's statistics are those of the tables as they are when the site is built.
-#}
{% macro compute_table_statistics() -%}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set analyzed = [] -%}
    {%- for node in graph.nodes.values()
            if node.resource_type in ('model', 'snapshot', 'seed')
            and node.config.materialized in ('table', 'incremental', 'snapshot', 'seed') -%}
        {%- set relation = adapter.get_relation(node.database, node.schema, node.alias) -%}
        {%- if relation is not none -%}
            {#- fetch=False: Spark 3.5 answers commands with a row set PyHive cannot read (macros/materializations/unit.sql) -#}
            {%- do adapter.execute('analyze table ' ~ relation ~ ' compute statistics', fetch=False) -%}
            {%- do analyzed.append(relation | string) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do log('computed statistics of ' ~ (analyzed | length) ~ ' tables', info=true) -%}
{%- endmacro %}
