{#-
  Where a state table's incremental read starts, from Hudi's timelines instead of a scan of
  the state (docs/architecture.md, "Incremental silver").

  Before a state model writes, its pre-hook (`cdc_record_bronze_instant`, dbt_project.yml)
  reads the newest completed commit of the model's bronze table and sets it as the session
  property `_lakehouse_bronze_instant`; Hudi copies session properties starting with `_`
  into the commit's extra metadata, so the state commit records the bronze instant it has
  read up to (the post-hook resets it). The next run reads only bronze commits newer than
  that instant (`cdc_state_watermark`).

  Why this is safe: a bronze table has one writer (ingestion/lake_lock.py) whose commits
  complete in instant order, so every commit at or before the recorded instant was
  complete before the merge read bronze, and the merge read all of them. Commits that
  land while the merge runs are newer than the recorded instant: the next run reads them
  (possibly again: merging is idempotent, the ordering field keeps the later event).
-#}

{#- The session property (and commit metadata key) holding the bronze instant a state commit read up to. -#}
{% macro cdc_bronze_instant_key() -%}
    {{ return('_lakehouse_bronze_instant') }}
{%- endmacro %}


{#-
  The newest completed commit instant (`yyyyMMddHHmmssSSS`) of a Hudi table, from its
  timeline (Hudi's `show_commits` procedure), or none when the table has no completed commit.
  With `writes_only`, a merge-on-read table's newest delta commit: its compactions (`commit`
  actions there) carry no metadata of the write they fold in, so the instant a state commit
  recorded is on its newest delta commit.

  table_name   `schema.table` as the catalog knows it
  writes_only  skip a merge-on-read table's compactions
-#}
{% macro cdc_latest_instant(table_name, writes_only=false) -%}
    {%- set result = run_query("call show_commits(table => '" ~ table_name ~ "', limit => " ~ (20 if writes_only else 1) ~ ")") -%}
    {%- if result.rows | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set actions = result.columns['action'].values() | list -%}
    {%- set index = actions.index('deltacommit') if writes_only and 'deltacommit' in actions else 0 -%}
    {%- set instant = result.columns['commit_time'].values()[index] | string -%}
    {%- if not modules.re.match('^[0-9]+$', instant) -%}
        {%- do exceptions.raise_compiler_error(table_name ~ ': latest commit ' ~ instant ~ ' is not a Hudi instant') -%}
    {%- endif -%}
    {{ return(instant) }}
{%- endmacro %}


{#-
  The bronze instant a state table has read up to: the value its newest commit recorded
  under `cdc_bronze_instant_key()`. A table written before the key existed (or a unit
  test's given rows) falls back to the newest `bronze_commit_time` among its rows, one
  scan of the state. Empty string when the table holds nothing.

  relation  the state table (this)
-#}
{% macro cdc_state_watermark(relation) -%}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- if model.resource_type != 'unit_test' -%}
        {%- set table_name = relation.schema ~ '.' ~ relation.identifier -%}
        {%- set instant = cdc_latest_instant(table_name, writes_only=true) -%}
        {%- if instant is not none -%}
            {%- set recorded = run_query(
                "call show_commit_extra_metadata(table => '" ~ table_name ~ "', instant_time => '" ~ instant
                ~ "', metadata_key => '" ~ cdc_bronze_instant_key() ~ "')") -%}
            {%- if recorded.rows | length > 0 -%}
                {{ return(cdc_checked_instant(relation, recorded.columns['metadata_value'].values()[0])) }}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
    {%- set result = run_query('select max(bronze_commit_time) as watermark from ' ~ relation) -%}
    {%- set watermark = result.columns[0].values()[0] if result.rows | length > 0 else none -%}
    {{ return(cdc_checked_instant(relation, watermark) if watermark is not none else '') }}
{%- endmacro %}


{#- `value` as a Hudi instant string; stops the run naming the relation when it is not one. -#}
{% macro cdc_checked_instant(relation, value) -%}
    {%- if not modules.re.match('^[0-9]+$', value | string) -%}
        {%- do exceptions.raise_compiler_error(relation ~ ': bronze instant ' ~ value ~ ' is not a Hudi instant') -%}
    {%- endif -%}
    {{ return(value | string) }}
{%- endmacro %}


{#-
  Pre-hook of the state models: `set` the newest completed commit of the model's bronze
  table as `_lakehouse_bronze_instant`, which Hudi records in the state commit's metadata.
  The bronze table is the source behind the model's staging model. Renders nothing when
  the bronze table has no commit yet (the state then records no instant and its next run
  falls back to a scan, see cdc_state_watermark), or when the state model is a view.
-#}
{% macro cdc_record_bronze_instant() -%}
    {%- if execute and model.config.materialized == 'incremental' -%}
        {%- set instant = cdc_latest_instant(cdc_bronze_table_name(model)) -%}
        {%- if instant is not none -%}
            set {{ cdc_bronze_instant_key() }} = {{ instant }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}


{#- `schema.table` of the bronze source a state model reads through its staging model. -#}
{% macro cdc_bronze_table_name(node) -%}
    {%- set found = [] -%}
    {%- for parent_id in node.depends_on.nodes if parent_id.startswith('model.') -%}
        {%- for source_id in graph.nodes[parent_id].depends_on.nodes if source_id.startswith('source.') -%}
            {%- set bronze = graph.sources[source_id] -%}
            {%- do found.append(bronze.schema ~ '.' ~ bronze.identifier) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if found | length != 1 -%}
        {%- do exceptions.raise_compiler_error(
            node.name ~ ': a state model reads one bronze table through its staging model, found ' ~ found) -%}
    {%- endif -%}
    {{ return(found[0]) }}
{%- endmacro %}
