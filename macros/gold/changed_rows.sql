{#-
  Incremental gold models (the wide facts and dim_users) keep their stored rows and merge
  only what changed. The model computes its whole result as usual (the joins are cheap
  next to rewriting a table of millions of rows); an incremental run then selects the
  rows that are new or differ from the stored row of the same key in any column (a
  null-safe comparison of every stored column), and dbt-spark's `merge` writes only
  those. Rows whose key left the model's result are deleted by `delete_stale_rows`
  (a post-hook). So a dimension renamed, a user's first purchase moved or a truncate
  reaches every fact row it touches, with no watermark to get wrong, and a run that
  changed nothing writes nothing.

  relation    the CTE (or relation) holding the model's whole result
  unique_key  the model's key column

  A dbt unit test of the model gets its whole result: the test gives rows, not a stored table.
-#}
{% macro changed_rows(relation, unique_key) -%}
{#- a unit test checks the model's logic on given rows: its whole result -#}
{%- if model.resource_type != 'unit_test' and is_incremental() -%}
{%- set columns = gold_stored_columns(this) %}
select fresh.*
from {{ relation }} as fresh
left join {{ this }} as stored on fresh.{{ unique_key }} = stored.{{ unique_key }}
where
    stored.{{ unique_key }} is null
    or not (
        {%- for column in columns %}
        fresh.{{ column }} <=> stored.{{ column }}{{ ' and' if not loop.last }}
        {%- endfor %}
    )
{%- else %}
select * from {{ relation }}
{%- endif -%}
{%- endmacro %}


{#- The data columns of a stored gold table (Hudi's `_hoodie_*` meta columns left out). -#}
{% macro gold_stored_columns(relation) -%}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- if column.name and not column.name.startswith('_hoodie_') -%}
            {%- do names.append(column.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(names) }}
{%- endmacro %}


{#-
  Post-hook of an incremental gold model: delete the stored rows whose key is no longer
  in `live_keys` (a query returning the keys the model's result holds, e.g. the silver
  entity's keys for a fact with one row per live entity). Runs only on an incremental
  run, and writes a Hudi commit only when there is a row to delete.

  unique_key  the model's key column
  live_keys   SQL of a query returning one column: the keys that stay
-#}
{% macro delete_stale_rows(unique_key, live_keys) -%}
    {%- if execute and is_incremental() -%}
        {%- set condition = unique_key ~ ' not in (' ~ live_keys ~ ')' -%}
        {%- set stale = run_query('select count(*) from ' ~ this ~ ' where ' ~ condition).columns[0].values()[0] -%}
        {%- if stale > 0 -%}
            {{ log(this ~ ': deleting ' ~ stale ~ ' rows whose key left the model', info=false) }}
            delete from {{ this }} where {{ condition }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
