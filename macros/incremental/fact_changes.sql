{#-
  What an incremental gold fact reads: its parents' changes since the fact's last run, from
  the parents' Hudi timelines (docs/architecture.md, "Incremental gold").

  A fact names its parent state models (`parents`: the state of its own entity first, then
  the dimensions whose members it resolves). Before the fact writes, its pre-hook
  (`fact_record_parent_instants`) sets `_lakehouse_parent_instants` to each parent's newest
  completed instant (`name:instant,...`); Hudi copies it into the fact commit's metadata.
  The next run reads, per parent, only what changed after that instant:
  - a state table (merge-on-read): Hudi's incremental query (`hudi_table_changes`, latest
    state of the keys written by later commits: it reads only those commits' files);
  - a state view (a small entity): the rows of its bronze commits after the instant.
  The parents are upstream of the fact, so their commits are complete when its pre-hook runs;
  the scheduled jobs never run two builds at once (lakehouse/jobs/lock.py).
-#}

{#- The session property (and commit-metadata key) holding the parents' instants a fact commit read up to. -#}
{% macro fact_parent_instants_key() -%}
    {{ return('_lakehouse_parent_instants') }}
{%- endmacro %}


{#- Whether a parent state model is a Hudi table (else a view over its bronze table). -#}
{% macro fact_parent_is_table(name) -%}
    {{ return(graph.nodes['model.' ~ project_name ~ '.' ~ name].config.materialized == 'incremental') }}
{%- endmacro %}


{#- The Hudi table whose timeline stands for a parent: the state table itself, or a view's bronze table. -#}
{% macro fact_parent_timeline(name) -%}
    {%- if fact_parent_is_table(name) -%}
        {%- set relation = ref(name) -%}
        {{ return(relation.schema ~ '.' ~ relation.identifier) }}
    {%- endif -%}
    {{ return(cdc_bronze_table_name(graph.nodes['model.' ~ project_name ~ '.' ~ name])) }}
{%- endmacro %}


{#- Each parent's newest completed instant, `name:instant` joined by commas ('' for none). -#}
{% macro fact_parent_instants(parents) -%}
    {%- set pairs = [] -%}
    {%- for name in parents -%}
        {%- do pairs.append(name ~ ':' ~ (cdc_latest_instant(fact_parent_timeline(name)) or '')) -%}
    {%- endfor -%}
    {{ return(pairs | join(',')) }}
{%- endmacro %}


{#- Pre-hook of an incremental fact: record its parents' instants in the fact commit. -#}
{% macro fact_record_parent_instants(parents) -%}
    {%- if execute and model.resource_type != 'unit_test' -%}
        set {{ fact_parent_instants_key() }} = {{ fact_parent_instants(parents) }}
    {%- endif -%}
{%- endmacro %}


{#-
  The instant each parent was at when the fact last ran, from the fact's newest commit: a
  dict by parent name. A parent the commit did not record (a fact written before the key
  existed, a unit test) maps to '': all of it counts as changed (a full recompute).

  relation  the fact table (this)
  parents   the parent state models' names
-#}
{% macro fact_since(relation, parents) -%}
    {%- set since = {} -%}
    {%- for name in parents -%}
        {%- do since.update({name: ''}) -%}
    {%- endfor -%}
    {%- if not execute or model.resource_type == 'unit_test' -%}
        {{ return(since) }}
    {%- endif -%}
    {%- set table_name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- set instant = cdc_latest_instant(table_name, writes_only=true) -%}
    {%- if instant is not none -%}
        {%- set recorded = run_query(
            "call show_commit_extra_metadata(table => '" ~ table_name ~ "', instant_time => '" ~ instant
            ~ "', metadata_key => '" ~ fact_parent_instants_key() ~ "')") -%}
        {%- if recorded.rows | length > 0 -%}
            {%- for pair in (recorded.columns['metadata_value'].values()[0] | string).split(',') -%}
                {%- set name, value = pair.split(':') -%}
                {%- if name in since and value and fact_parent_is_table(name) -%}
                    {#- Hudi's incremental query sees only the active timeline: an instant archived
                        since (a fact not run for many of its parent's commits) means a full recompute -#}
                    {%- if cdc_checked_instant(relation, value) >= fact_earliest_instant(fact_parent_timeline(name)) -%}
                        {%- do since.update({name: value}) -%}
                    {%- endif -%}
                {%- elif name in since and value -%}
                    {%- do since.update({name: cdc_checked_instant(relation, value)}) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(since) }}
{%- endmacro %}


{#- The earliest completed commit on a Hudi table's active timeline ('' when it has none). -#}
{% macro fact_earliest_instant(table_name) -%}
    {%- set result = run_query("call show_commits(table => '" ~ table_name ~ "', limit => 100000)") -%}
    {{ return(result.columns['commit_time'].values() | map('string') | min if result.rows | length > 0 else '') }}
{%- endmacro %}


{#-
  The rows (`state_key`, `is_truncate`) of a parent that changed after `instant`.

  name     the parent state model
  instant  where the fact's last run left it (fact_since)
-#}
{% macro fact_parent_changes(name, instant) -%}
    {%- if fact_parent_is_table(name) -%}
    select state_key, is_truncate
    from hudi_table_changes('{{ fact_parent_timeline(name) }}', 'latest_state', '{{ instant }}')
    {%- else -%}
    select state_key, is_truncate
    from {{ ref(name) }}
    where bronze_commit_time > '{{ instant }}'
    {%- endif -%}
{%- endmacro %}


{#-
  Whether the fact must recompute every row: a parent it has no recorded instant for, or a
  truncate in a parent's changes (every member of the table went at once).
-#}
{% macro fact_needs_full_recompute(since) -%}
    {%- if not execute or model.resource_type == 'unit_test' -%}
        {{ return(true) }}
    {%- endif -%}
    {%- if '' in since.values() -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set parts = [] -%}
    {%- for name, instant in since.items() -%}
        {%- do parts.append('select count_if(is_truncate) as truncates from (' ~ fact_parent_changes(name, instant) ~ ')') -%}
    {%- endfor -%}
    {%- set result = run_query('select sum(truncates) from (' ~ parts | join(' union all ') ~ ')') -%}
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
  The scratch table holding an incremental fact's candidate keys (fact_stage_candidates):
  a plain parquet table beside the fact, written once per run and dropped after it. Not a
  cached temporary view: Spark resolves a Hudi relation anew on every read, so a cached
  plan over one never matches and the candidates were computed once per read (2026-11-29,
  docs/performance.md).
-#}
{% macro fact_candidates_relation() -%}
    {{ return(this.schema ~ '.' ~ this.identifier ~ '__dbt_candidates') }}
{%- endmacro %}


{#-
  Pre-hook of an incremental fact: the scratch table of its candidate keys, the keys whose
  rows may differ from the stored ones. In a star schema a fact row depends on its own
  entity's row and on whether each member it points at is live, so the candidates are
  - the fact's own keys whose state changed since the last run (its incremental query);
  - the stored rows pointing at a member whose state changed (it may have gone), found by
    one scan of the stored key columns joined on (parent, member key) with the changed
    members;
  - the stored rows pointing at an unknown member (-1): the member may have arrived.
  On a full recompute (fact_needs_full_recompute) every stored and every live key.
  The model reads the candidates twice (its silver rows and its stored rows).

  parents  the parent state models, the fact entity's own first
  key      the fact's key column, e.g. 'sale_id' (an int; state_key is its string)
  rows     the fact entity's live silver model, e.g. 'sales'
  members  dict: fact key column -> the dimension state model its members come from
-#}
{% macro fact_stage_candidates(parents, key, rows, members) -%}
{%- if execute and is_incremental() -%}
{%- set since = fact_since(this, parents) -%}
create table {{ fact_candidates_relation() }} using parquet as
{% if fact_needs_full_recompute(since) -%}
select {{ key }} from {{ ref(rows) }}
union
select {{ key }} from {{ this }}
{%- else -%}
{%- set stack_args = [] -%}
{%- for column, parent in members.items() -%}
    {%- do stack_args.append("'" ~ parent ~ "', " ~ column) -%}
{%- endfor -%}
with

changed_members as (

    {%- for parent in members.values() | unique %}
    select '{{ parent }}' as parent, changes.state_key
    from ({{ fact_parent_changes(parent, since[parent]) | indent(8) }}) as changes
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}

),

stored_members as (

    select
        {{ key }},
        stack({{ members | length }}, {{ stack_args | join(', ') }}) as (parent, member)
    from {{ this }}

)

select cast(own_changes.state_key as int) as {{ key }}
from ({{ fact_parent_changes(parents[0], since[parents[0]]) | indent(4) }}) as own_changes
union
select stored_members.{{ key }}
from stored_members
left join changed_members
    on
        stored_members.parent = changed_members.parent
        and cast(stored_members.member as string) = changed_members.state_key
where changed_members.state_key is not null or stored_members.member = {{ var('unknown_member_key') }}
{%- endif -%}
{%- endif -%}
{%- endmacro %}


{#- Pre- and post-hook of an incremental fact: drop its candidates' scratch table. -#}
{% macro fact_drop_candidates() -%}
    drop table if exists {{ fact_candidates_relation() }}
{%- endmacro %}


{#-
  The final select of a fact: on a full refresh its rows (`rows_cte`); on an incremental
  run, the recomputed candidate rows that differ from the stored ones (is_removed false)
  and the stored candidates no longer live (is_removed true: the merge deletes them, see
  spark__get_merge_sql), from one full join of the two.

  columns   the fact's columns, in the model's order
  key       the fact's key column
  rows_cte  the CTE holding the recomputed candidate rows
-#}
{% macro fact_final_select(columns, key, rows_cte) -%}
{%- if not is_incremental() -%}
select * from {{ rows_cte }}
{%- else -%}
, stored as (

    select {{ columns | join(', ') }}
    from {{ this }} as stored_rows
    left semi join candidates on stored_rows.{{ key }} = candidates.{{ key }}

),

compared as (

    select
        recomputed.{{ key }} is null as is_removed,
        {%- for column in columns %}
        if(recomputed.{{ key }} is null, stored.{{ column }}, recomputed.{{ column }}) as {{ column }},
        {%- endfor %}
        {#- null-safe: a column that was and is null is unchanged #}
        struct({% for column in columns %}recomputed.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
        <=> struct({% for column in columns %}stored.{{ column }}{{ ', ' if not loop.last }}{% endfor %}) as is_unchanged
    from {{ rows_cte }} as recomputed
    full join stored on recomputed.{{ key }} = stored.{{ key }}

)

select
    {{ columns | join(',\n    ') }},
    is_removed
from compared
where not is_unchanged
{%- endif -%}
{%- endmacro %}
