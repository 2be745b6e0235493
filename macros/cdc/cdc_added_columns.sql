{#-
  Columns a source added that its contract does not name yet (schema_changes: evolve,
  docs/architecture.md "Schema changes"): bronze appends them after the `_cdc_*` columns,
  typed. Staging passes them through under their source names, and the state and the
  published silver models after it, so an added column reaches silver with the next
  incremental build (the state tables' `on_schema_change: sync_all_columns` adds it).
  Read from the relations when the model runs; nothing at parse time. The names come back
  quoted (`adapter.quote`): a source may add a column named like a SQL keyword (`join`,
  `union`) or one that is no plain identifier.
-#}

{#- `, col, ...` for a staging model: the columns of source `source_name`.`table_name` beyond
    those its YAML declares (after the change metadata, under their source names). -#}
{% macro cdc_added_source_columns(source_name, table_name) -%}
    {%- for name in cdc_source_added_column_names(source_name, table_name) %},
        {{ name }}
    {%- endfor -%}
{%- endmacro %}


{% macro cdc_source_added_column_names(source_name, table_name) -%}
    {%- set source_relation = source(source_name, table_name) -%}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set declared = [] -%}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == source_name and node.name == table_name -%}
            {%- for column in node.columns -%}
                {%- do declared.append(column | lower) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set added = [] -%}
    {%- for column in cdc_relation_column_names(source_relation) -%}
        {%- set name = column | lower -%}
        {%- if name not in declared and not name.startswith('_cdc_') and not name.startswith('_hoodie_') -%}
            {%- do added.append(adapter.quote(name)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(added) }}
{%- endmacro %}


{#- The columns of `relation` that are neither in `known` nor change metadata (state, published models). -#}
{% macro cdc_added_relation_columns(relation, known) -%}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set skip = known + cdc_metadata_column_names() + cdc_state_metadata_columns() + ['last_changed_at'] -%}
    {%- set added = [] -%}
    {%- for column in cdc_relation_column_names(relation) -%}
        {%- if column | lower not in skip and not (column | lower).startswith('_hoodie_') -%}
            {%- do added.append(adapter.quote(column | lower)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(added) }}
{%- endmacro %}


{#- The columns a query of `relation` returns: for a Hudi table its latest schema, which
    DESCRIBE (the metastore's copy, from when the table was registered) does not show.
    None for a relation that does not exist yet (a first build, the linter). -#}
{% macro cdc_relation_column_names(relation) -%}
    {#- a unit test's inputs are given rows, not relations: nothing to read -#}
    {%- if model.resource_type == 'unit_test' or relation.identifier is none or load_relation(relation) is none -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(run_query('select * from ' ~ relation ~ ' limit 0').column_names | list) }}
{%- endmacro %}
