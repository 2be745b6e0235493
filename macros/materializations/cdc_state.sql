{#-
  Materialization of the silver CDC state tables on parquet (the embedded default).

  A state table has two layers, the partitions of `state_layer` (macros/cdc/cdc_state.sql):
  a full refresh (or the first run) writes every key's latest event to `base`; an
  incremental run rewrites the `delta` partition alone. dbt-spark's `incremental`
  materialization can do the latter with `insert_overwrite`, but spends ten statements
  per model on it (a temporary view, three `describe`s, a session setting, the insert);
  each statement analyses the view chain down to the bronze files again. This one runs
  the model's query once:

    - first run, `--full-refresh`, or an existing view: `create table ... as` (dropping
      what was there), as dbt-spark does, with the table option
      `partitionOverwriteMode "dynamic"` (see below);
    - otherwise: `insert overwrite table ... partition (state_layer)` in dynamic
      partition-overwrite mode (the query's rows are all `delta`, so only that partition
      is replaced; the table option sets the mode, so no session `set` is needed, except
      for tables created before the option was added), the columns named from the model's column list. The table's columns come from the
      relation cache dbt filled with `show table extended` (no statement); when they
      differ from the model's (a column added or removed in the model), the run fails
      and asks for `--full-refresh`, as `on_schema_change: fail` would.

  An incremental run whose bronze window is empty (cdc_window_of: no bronze commit after
  the watermark, by the synced instant of the bronze view) runs no statement at all and
  reports `OK (no new commits)`; hooks do not run either, as there is nothing to record.

  The model must call cdc_state(), which records its column list in the model's config
  (`cdc_state_columns`). Hooks (the watermark post-hook) run as in any materialization.
  On hudi (cluster) the state models use dbt-spark's `incremental` with `merge` instead
  (dbt_project.yml).
-#}
{% materialization cdc_state, adapter='spark' -%}
  {%- set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set columns = config.get('cdc_state_columns') or [] -%}
  {%- if not columns -%}
    {%- do exceptions.raise_compiler_error(
        model.name ~ ": the cdc_state materialization needs a model built with the cdc_state() macro") -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing is not none and existing.is_table and not should_full_refresh() -%}
    {%- set table_columns = cdc_state_table_columns(existing) -%}
    {%- if table_columns != columns + ['state_layer'] -%}
      {%- do exceptions.raise_compiler_error(
          target ~ " has the columns " ~ table_columns | join(', ') ~ " but the model now has "
          ~ (columns + ['state_layer']) | join(', ') ~ ": rebuild it with `dbt run --full-refresh -s "
          ~ model.name ~ "`") -%}
    {%- endif -%}
    {%- set window = cdc_window_of(sql) -%}
    {%- if window is not none and window[1] <= window[0] -%}
      {#- no bronze commit since the watermark: nothing to read, nothing to record -#}
      {{ log(target ~ ': no bronze commit after ' ~ window[0] ~ ', nothing to do') }}
      {%- call noop_statement('main', 'OK (no new commits)') -%}{%- endcall -%}
      {{ return({'relations': [target]}) }}
    {%- endif -%}
    {#- dynamic: only the partitions the query writes are replaced, and Spark lets a
        query overwrite a table it reads (the delta rows are part of the new delta).
        Tables this materialization created carry it as a table option; older ones get
        it from the session. -#}
    {%- if not cdc_state_has_dynamic_overwrite(existing) -%}
      {%- call statement('partition_overwrite_mode') -%}
        set spark.sql.sources.partitionOverwriteMode = DYNAMIC
      {%- endcall -%}
    {%- endif -%}
    {%- call statement('main') -%}
      insert overwrite table {{ target }} partition (state_layer)
      select {{ (columns + ['state_layer']) | join(', ') }}
      from (
        {{ sql }}
      ) as cdc_state_delta
    {%- endcall -%}
  {%- else -%}
    {%- if existing is not none -%}
      {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- call statement('main') -%}
      {{ cdc_state_create_table_as(target, sql) }}
    {%- endcall -%}
  {%- endif -%}

  {% do persist_docs(target, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target]}) }}
{%- endmaterialization %}


{#-
  Top-level column names of an existing table, in order: parsed from the `information`
  dbt's relation cache holds (the output of `show table extended`), or from a
  `describe` when the cached relation carries none.

  relation  the existing table (from adapter.get_relation)
-#}
{% macro cdc_state_table_columns(relation) -%}
  {%- set information = relation.information or '' -%}
  {%- set names = modules.re.findall('(?m)^ \\|-- (.+?): ', information) -%}
  {%- if not names -%}
    {%- set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
  {%- endif -%}
  {{ return(names | list) }}
{%- endmacro %}


{#-
  is_incremental() for the CDC state models: true when the state table exists as a
  table and this is not a full refresh. dbt's own is_incremental() is true only for the
  `incremental` materialization, which the state models use on hudi alone.
-#}
{% macro cdc_state_is_incremental() -%}
  {%- if config.get('materialized') != 'cdc_state' -%}
    {{ return(is_incremental()) }}
  {%- endif -%}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set relation = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) -%}
  {{ return(relation is not none and relation.is_table and not should_full_refresh()) }}
{%- endmacro %}


{#-
  dbt-spark's create_table_as for a non-temporary parquet table, with the table option
  `partitionOverwriteMode "dynamic"` added to the model's `options`: Spark reads a
  table's options before the session setting when it plans an `insert overwrite`.
  (dbt-spark's options_clause reads `options` from the model config only.)

  relation  the table to create
  sql       the model's compiled query
-#}
{% macro cdc_state_create_table_as(relation, sql) -%}
  {%- set options = {'partitionOverwriteMode': 'dynamic'} -%}
  {%- do options.update(config.get('options') or {}) -%}
  create table {{ relation }}
  {{ file_format_clause() }}
  options (
    {%- for name, value in options.items() %}
    {{ name }} "{{ value }}"{{ ',' if not loop.last }}
    {%- endfor %}
  )
  {{ tblproperties_clause() }}
  {{ partition_cols(label="partitioned by") }}
  {{ clustered_cols(label="clustered by") }}
  {{ location_clause() }}
  {{ comment_clause() }}
  as
  {{ sql }}
{%- endmacro %}


{#-
  True when the cached `information` of an existing state table shows the table option
  `partitionOverwriteMode=dynamic` (tables created by cdc_state_create_table_as).
-#}
{% macro cdc_state_has_dynamic_overwrite(relation) -%}
  {%- set line = modules.re.search('(?m)^Storage Properties: \\[(.*)\\]$', relation.information or '') -%}
  {{ return(line is not none and modules.re.search('(?i)(^|, )partitionOverwriteMode=dynamic(,|$)', line.group(1)) is not none) }}
{%- endmacro %}
