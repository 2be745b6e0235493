{#-
  Warns for every column of the model's relation that its YAML does not describe (or
  describes only with the `TODO: describe` placeholder of `lakehouse tables add`): a
  column a source added reaches silver on its own (docs/architecture.md, "Schema
  changes"), and this says it still needs a name and a description. Severity warn: the
  build goes on.
-#}
{% test columns_are_documented(model) %}
{{ config(severity='warn') }}
{%- set undocumented = [] -%}
{#- the relation is read when the test runs (test, build), not when it is only compiled -#}
{%- if execute and flags.WHICH in ['test', 'build'] -%}
    {%- set described = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.alias == model.identifier -%}
            {%- for name, column in node.columns.items() -%}
                {%- if column.description and not column.description.startswith('TODO: describe') -%}
                    {%- do described.append(name | lower) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for name in cdc_relation_column_names(model) -%}
        {%- if name | lower not in described -%}
            {%- do undocumented.append(name | lower) -%}
        {%- endif -%}
    {%- endfor -%}
{%- endif -%}
{%- if undocumented %}
    {%- for name in undocumented %}
select '{{ name }}' as undocumented_column
        {%- if not loop.last %}
union all
        {%- endif %}
    {%- endfor %}
{%- else %}
select cast(null as string) as undocumented_column
where false
{%- endif %}
{% endtest %}
