{#-
  What an incremental gold fact reads: its entity's changes since the fact's last run, from
  the Hudi timeline of the entity's silver state table (docs/architecture.md, "Incremental
  gold").

  A fact row is a function of one silver row (its keys as the source gives them, measures
  and dates; no dimension lookup, see models/gold/_gold__docs.md), so the rows to redo are
  the keys its state table wrote since the last run. Before the fact writes, its pre-hook
  (`fact_record_parent_instant`) sets `_lakehouse_parent_instant` to the state table's
  newest completed instant; Hudi copies it into the fact commit's metadata. The next run
  reads Hudi's incremental query (`hudi_table_changes`, latest state of the keys written by
  later commits: it reads only those commits' files), recomputes those keys from silver,
  merges the live ones and deletes the others. The state is upstream of the fact, so its
  commits are complete when the fact's pre-hook runs; the scheduled jobs never run two
  builds at once (lakehouse/jobs/lock.py).
-#}

{#- The session property (and commit-metadata key) holding the state instant a fact commit read up to. -#}
{% macro fact_parent_instant_key() -%}
    {{ return('_lakehouse_parent_instant') }}
{%- endmacro %}


{#- `schema.table` of a fact's parent state table (an incremental Hudi model). -#}
{% macro fact_parent_table(parent) -%}
    {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ parent] -%}
    {%- if node.config.materialized != 'incremental' -%}
        {{ exceptions.raise_compiler_error(
            "fact parent " ~ parent ~ " is a " ~ node.config.materialized
            ~ ": an incremental fact reads the timeline of a Hudi state table") }}
    {%- endif -%}
    {%- set relation = ref(parent) -%}
    {{ return(relation.schema ~ '.' ~ relation.identifier) }}
{%- endmacro %}


{#- Pre-hook of an incremental fact: record its parent's newest instant in the fact commit. -#}
{% macro fact_record_parent_instant(parent) -%}
    {%- if execute and model.resource_type != 'unit_test' -%}
        {%- set instant = cdc_latest_instant(fact_parent_table(parent)) -%}
        {%- if instant is not none -%}
            set {{ fact_parent_instant_key() }} = {{ instant }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}


{#-
  The instant the parent was at when the fact last ran, from the fact's newest delta commit
  (an inline compaction records none). '' means every row is redone: no such commit (a
  unit test, a fact written before the key existed), or an instant that has left the
  parent's active timeline (Hudi's incremental query sees only the active timeline).

  relation  the fact table (this)
  parent    the parent state model's name
-#}
{% macro fact_since(relation, parent) -%}
    {%- if not execute or model.resource_type == 'unit_test' -%}
        {{ return('') }}
    {%- endif -%}
    {%- set table_name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- set instant = cdc_latest_instant(table_name, writes_only=true) -%}
    {%- if instant is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set recorded = run_query(
        "call show_commit_extra_metadata(table => '" ~ table_name ~ "', instant_time => '" ~ instant
        ~ "', metadata_key => '" ~ fact_parent_instant_key() ~ "')") -%}
    {%- if recorded.rows | length == 0 or not recorded.columns['metadata_value'].values()[0] -%}
        {{ return('') }}
    {%- endif -%}
    {%- set since = cdc_checked_instant(relation, recorded.columns['metadata_value'].values()[0] | string) -%}
    {{ return(since if since >= fact_earliest_instant(fact_parent_table(parent)) else '') }}
{%- endmacro %}


{#- The earliest completed commit on a Hudi table's active timeline ('' when it has none). -#}
{% macro fact_earliest_instant(table_name) -%}
    {%- set result = run_query("call show_commits(table => '" ~ table_name ~ "', limit => 100000)") -%}
    {{ return(result.columns['commit_time'].values() | map('string') | min if result.rows | length > 0 else '') }}
{%- endmacro %}


{#- The rows (latest state of each key) the parent state table wrote after `instant`. -#}
{% macro fact_parent_changes(parent, instant) -%}
    select *
    from hudi_table_changes('{{ fact_parent_table(parent) }}', 'latest_state', '{{ instant }}')
{%- endmacro %}


{#-
  Whether an incremental fact redoes every row: no usable instant (fact_since), or a
  truncate among the parent's changes (every row of the entity went at once).
-#}
{% macro fact_needs_full_recompute(parent, since) -%}
    {%- if not execute or model.resource_type == 'unit_test' or not since -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set result = run_query(
        'select count_if(is_truncate) from (' ~ fact_parent_changes(parent, since) ~ ')') -%}
    {{ return((result.columns[0].values()[0] or 0) > 0) }}
{%- endmacro %}


{#-
  Hudi options of an incremental gold fact: a merge-on-read table keyed by `key` with the
  bucket index, as the silver state tables (dbt_project.yml), and no ordering field (a
  fact row is replaced by the run's).
-#}
{% macro fact_table_options(key) -%}
    {{ return({
        'type': 'mor',
        'primaryKey': key,
        'hoodie.index.type': 'BUCKET',
        'hoodie.bucket.index.hash.field': key,
        'hoodie.bucket.index.num.buckets': '8',
        'hoodie.compact.inline': 'true',
        'hoodie.compact.inline.max.delta.commits': '10',
        'hoodie.write.table.version': '6',
        'hoodie.metadata.enable': 'false',
        'hoodie.embed.timeline.server': 'false',
        'hoodie.write.markers.type': 'DIRECT',
        'hoodie.parquet.compression.codec': 'zstd',
    }) }}
{%- endmacro %}


{#-
  The CTEs a fact reads, rendered once per run (the instant is looked up here):

  - `<rows>`: the entity's live rows to recompute. On a full refresh or a full recompute
    (fact_needs_full_recompute), the live silver model `rows`. Otherwise only the rows its
    parent state wrote since the last run, from Hudi's incremental query, kept when live
    by the rule the silver view applies (cdc_is_live): the run reads the commits since the
    last one, not the whole state.
  - `changed` (incremental runs): the keys the fact redoes, as the one column `key`: those
    the parent wrote since the last run, or on a full recompute every stored and every
    live key. A changed key without a live row is deleted (fact_final_select).

  parent  the parent state model's name
  key     the fact's key column, e.g. 'sale_id' (an int; state_key is its string)
  rows    the fact entity's live silver model, e.g. 'sales'; also the name of its CTE
-#}
{% macro fact_source(parent, key, rows) -%}
{%- set since = fact_since(this, parent) if is_incremental() else '' -%}
{%- if not is_incremental() or fact_needs_full_recompute(parent, since) -%}
{%- if is_incremental() -%}
changed as (

    select {{ key }} from {{ ref(rows) }}
    union
    select {{ key }} from {{ this }}

),

{% endif -%}
{{ rows }} as (

    select * from {{ ref(rows) }}

)
{%- else -%}
parent_changes as (

    {{ fact_parent_changes(parent, since) | indent(4) }}

),

changed as (

    select distinct cast(parent_changes.state_key as int) as {{ key }}
    from parent_changes
    where not parent_changes.is_truncate

),

last_truncate as (

    {{ cdc_last_truncate(ref(parent)) | indent(4) }}

),

{{ rows }} as (

    select
        parent_changes.*,
        parent_changes.cdc_source_ts as last_changed_at
    from parent_changes
    cross join last_truncate
    where {{ cdc_is_live('parent_changes', 'last_truncate') }}

)
{%- endif -%}
{%- endmacro %}


{#-
  The final select of a fact: on a full refresh its rows (`rows_cte`); on an incremental
  run one row per changed key (`changed_cte`, from fact_source): its recomputed row,
  or, for a key no longer live, the key flagged `is_removed` (the merge deletes it, see
  spark__get_merge_sql).

  columns      the fact's columns, in the model's order, the key first
  key          the fact's key column
  rows_cte     the CTE holding the recomputed rows (restricted to the changed keys)
  changed_cte  the CTE holding the changed keys
-#}
{% macro fact_final_select(columns, key, rows_cte, changed_cte) -%}
{%- if not is_incremental() -%}
select * from {{ rows_cte }}
{%- else -%}
select
    {{ changed_cte }}.{{ key }},
    {%- for column in columns if column != key %}
    {{ rows_cte }}.{{ column }},
    {%- endfor %}
    {{ rows_cte }}.{{ key }} is null as is_removed
from {{ changed_cte }}
left join {{ rows_cte }} on {{ changed_cte }}.{{ key }} = {{ rows_cte }}.{{ key }}
{%- endif -%}
{%- endmacro %}
