{#-
  View materialization for dbt-spark that leaves an unchanged view alone.

  dbt-spark re-creates every view on every run (`create or replace view`), which costs
  the Thrift server a full analysis of the view's query and several metastore calls per
  view, for nothing when the definition did not change: the usual case of a scheduled
  `dbt build` or an incremental `dbt run`. This project-level override (dbt picks a
  project's `{% materialization view, adapter='spark' %}` over the adapter's) skips the
  statement when all of these hold, and otherwise runs dbt's own create_or_replace_view:

    - the relation exists and is a view;
    - this is not a `--full-refresh` run (a full refresh always re-creates views);
    - the model has no pre/post-hooks and no grants (they would have to run);
    - the view's stored original text (from the relation cache dbt fills with
      `show table extended`, no extra statement) equals the compiled SQL.

  A view reads its relations by name, so a view whose text is unchanged keeps reading
  the current rows of the tables it selects from, whatever those tables went through.
-#}
{% materialization view, adapter='spark' -%}
  {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- if existing is not none
        and existing.is_view
        and not should_full_refresh()
        and (pre_hooks | length) == 0
        and (post_hooks | length) == 0
        and not config.get('grants')
        and view_text_unchanged(existing, sql) -%}
    {{ log(existing ~ ': view definition unchanged, not re-created') }}
    {%- call noop_statement('main', 'OK (unchanged)') -%}{%- endcall -%}
    {{ return({'relations': [existing]}) }}
  {%- endif -%}
  {{ return(create_or_replace_view()) }}
{%- endmaterialization %}


{#-
  True when the cached `information` of a Spark view (the output of
  `show table extended`) holds exactly `sql` as the view's original text. Spark stores
  the text of the query as written after AS, so anything else (an older definition, a
  view created by hand, a relation cached without its information) gives false and the
  view is re-created.

  relation  the existing view (from adapter.get_relation)
  sql       the model's compiled SQL
-#}
{% macro view_text_unchanged(relation, sql) -%}
  {%- set information = relation.information or '' -%}
  {%- set expected = 'View Original Text: ' ~ (sql | trim) ~ '\n' -%}
  {{ return(expected in information) }}
{%- endmacro %}
