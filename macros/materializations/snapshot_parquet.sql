{#-
  Snapshot materialization for dbt-spark that also works on plain parquet.

  dbt-spark's own snapshot materialization refuses any format but delta/iceberg/hudi,
  because it applies changes with MERGE. This project-level override (dbt picks a
  project's `{% materialization snapshot, adapter='spark' %}` over the adapter's) keeps
  dbt's snapshot staging logic (strategies, dbt_scd_id, hard deletes) and applies it:

    - on delta / iceberg / hudi (the cluster): with dbt-spark's MERGE, as before;
    - on parquet (the embedded default): by rewriting the table. The next version of the
      table (current rows with closed `dbt_valid_to` where the staging says so, plus the
      new versions) is first written to `<name>__dbt_next` (the staging view reads the
      target, so the target cannot be overwritten while it is read), then copied over the
      target with INSERT OVERWRITE, then dropped. A run killed before the overwrite leaves
      the target unchanged; the next run rebuilds `__dbt_next`.
-#}
{% materialization snapshot, adapter='spark' %}

  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set file_format = config.get('file_format') or 'parquet' -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set merge_formats = ['delta', 'iceberg', 'hudi'] -%}

  {%- if file_format not in merge_formats + ['parquet'] -%}
    {% do exceptions.raise_compiler_error(
        "snapshot " ~ model.name ~ ": file_format must be parquet, delta, iceberg or hudi, got " ~ file_format) %}
  {%- endif -%}

  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none,
          schema=model.schema,
          identifier=target_table,
          type='table') -%}

  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}

  {% if not target_relation_exists %}

      {% set build_sql = build_snapshot_table(strategy, model['compiled_code']) %}
      {% set final_sql = create_table_as(False, target_relation, build_sql) %}

  {% else %}

      {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}
      {{ adapter.valid_snapshot_target(target_relation, columns) }}

      {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}

      {% set missing_columns = adapter.get_missing_columns(staging_table, target_relation)
                                   | rejectattr('name', 'in', ['dbt_change_type', 'DBT_CHANGE_TYPE',
                                                               'dbt_unique_key', 'DBT_UNIQUE_KEY'])
                                   | list %}
      {% do create_columns(target_relation, missing_columns) %}

      {% if file_format in merge_formats %}
          {% set source_columns = adapter.get_columns_in_relation(staging_table)
                                       | rejectattr('name', 'in', ['dbt_change_type', 'DBT_CHANGE_TYPE',
                                                                   'dbt_unique_key', 'DBT_UNIQUE_KEY'])
                                       | list %}
          {% set quoted_source_columns = [] %}
          {% for column in source_columns %}
            {% do quoted_source_columns.append(adapter.quote(column.name)) %}
          {% endfor %}
          {% set final_sql = snapshot_merge_sql(
                target=target_relation, source=staging_table, insert_cols=quoted_source_columns) %}
      {% else %}
          {% set next_relation = target_relation.incorporate(
                path={"identifier": target_relation.identifier ~ '__dbt_next'}) %}
          {% do adapter.drop_relation(next_relation) %}
          {% call statement('build_next_snapshot_version') %}
              {{ create_table_as(False, next_relation,
                                 snapshot_parquet_next_version_sql(target_relation, staging_table, columns)) }}
          {% endcall %}
          {% set final_sql = snapshot_parquet_overwrite_sql(target_relation, next_relation) %}
      {% endif %}

  {% endif %}

  {% call statement('main') %}
      {{ final_sql }}
  {% endcall %}

  {% if next_relation is defined %}
      {% do adapter.drop_relation(next_relation) %}
  {% endif %}

  {% set should_revoke = should_revoke(target_relation_exists, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}

  {% if staging_table is defined %}
      {% do post_snapshot(staging_table) %}
  {% endif %}

  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}

{% endmaterialization %}


{#-
  The next version of a parquet snapshot table: every current row, with `dbt_valid_to`
  closed where the staging relation has an update or delete for its dbt_scd_id, plus
  the staging's inserts (new keys and new versions of changed keys).

  target    the snapshot table
  staging   dbt's snapshot staging relation (dbt_change_type insert / update / delete)
  columns   the snapshot meta column names (get_snapshot_table_column_names)
-#}
{% macro snapshot_parquet_next_version_sql(target, staging, columns) -%}
    {%- set target_columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
    with

    closing as (

        select {{ columns.dbt_scd_id }} as closing_scd_id, {{ columns.dbt_valid_to }} as closing_valid_to
        from {{ staging }}
        where dbt_change_type in ('update', 'delete')

    )

    select
        {%- for name in target_columns %}
        {%- if name == columns.dbt_valid_to %}
        case
            when existing.{{ columns.dbt_valid_to }} is null and closing.closing_scd_id is not null
                then closing.closing_valid_to
            else existing.{{ columns.dbt_valid_to }}
        end as {{ adapter.quote(name) }}{{ ',' if not loop.last }}
        {%- else %}
        existing.{{ adapter.quote(name) }}{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from {{ target }} as existing
    left join closing on existing.{{ columns.dbt_scd_id }} = closing.closing_scd_id

    union all

    select
        {%- for name in target_columns %}
        inserts.{{ adapter.quote(name) }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ staging }} as inserts
    where inserts.dbt_change_type = 'insert'
{%- endmacro %}


{#- Replace the snapshot table's rows by those of `next_relation` (same columns). -#}
{% macro snapshot_parquet_overwrite_sql(target, next_relation) -%}
    {%- set target_columns = adapter.get_columns_in_relation(target) | map(attribute='quoted') | join(', ') -%}
    insert overwrite table {{ target }}
    select {{ target_columns }} from {{ next_relation }}
{%- endmacro %}
