{#-
  What an incremental gold fact reads: the keys whose silver state changed since the fact's
  last run, found from the bronze instants each parent state reflected then
  (docs/architecture.md, "Incremental gold").

  A fact names its parent state models (`parents`: the state of its own entity first, then
  the dimensions whose members it resolves). Before the fact writes, its pre-hook
  (`fact_record_parent_instants`) sets `_lakehouse_parent_instants` to each parent's
  current bronze instant (`name:instant,...`); Hudi copies it into the fact commit's
  metadata. The next run reads the parents' rows whose `bronze_commit_time` is newer
  (`fact_since`). A parent state table's instant is the one its own newest commit
  recorded (cdc_state_watermark); a parent state view's is its bronze table's newest commit.
  The parents are upstream of the fact, so they are complete when its pre-hook runs; the
  scheduled jobs never run two builds at once (lakehouse/jobs/lock.py).
-#}

{#- The session property (and commit-metadata key) holding the parents' instants a fact commit read up to. -#}
{% macro fact_parent_instants_key() -%}
    {{ return('_lakehouse_parent_instants') }}
{%- endmacro %}


{#- Each parent state model's current bronze instant, `name:instant` joined by commas. -#}
{% macro fact_parent_instants(parents) -%}
    {%- set pairs = [] -%}
    {%- for name in parents -%}
        {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ name] -%}
        {%- if node.config.materialized == 'incremental' -%}
            {%- set instant = cdc_state_watermark(ref(name)) -%}
        {%- else -%}
            {%- set instant = cdc_latest_instant(cdc_bronze_table_name(node)) or '' -%}
        {%- endif -%}
        {%- do pairs.append(name ~ ':' ~ instant) -%}
    {%- endfor -%}
    {{ return(pairs | join(',')) }}
{%- endmacro %}


{#- Pre-hook of an incremental fact: record its parents' instants in the fact commit. -#}
{% macro fact_record_parent_instants(parents) -%}
    {%- if execute -%}
        set {{ fact_parent_instants_key() }} = {{ fact_parent_instants(parents) }}
    {%- endif -%}
{%- endmacro %}


{#-
  The bronze instant each parent reflected at the fact's last run, from the fact's newest
  commit: a dict by parent name. A parent the commit did not record (a fact written before
  the key existed) maps to '' (every row of it counts as changed: a full recompute).

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
    {%- set instant = cdc_latest_instant(table_name) -%}
    {%- if instant is not none -%}
        {%- set recorded = run_query(
            "call show_commit_extra_metadata(table => '" ~ table_name ~ "', instant_time => '" ~ instant
            ~ "', metadata_key => '" ~ fact_parent_instants_key() ~ "')") -%}
        {%- if recorded.rows | length > 0 -%}
            {%- for pair in (recorded.columns['metadata_value'].values()[0] | string).split(',') -%}
                {%- set name, value = pair.split(':') -%}
                {%- if name in since and value -%}
                    {%- do since.update({name: cdc_checked_instant(relation, value)}) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(since) }}
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
  CTEs `changed_states`, `any_truncate` and `candidates` of an incremental fact: the keys
  whose rows may differ from the stored ones. Candidates are the fact's own keys whose state
  changed since the last run, the rows of `rows_cte` pointing at a dimension member whose
  state changed (a member may have come or gone, so its key resolves differently), and,
  after a truncate of any parent, every key (stored or live).

  since       the parents' instants at the last run (fact_since)
  own_state   the fact entity's state model, e.g. 'sales_cdc_state'
  key         the fact's key column, e.g. 'sale_id' (an int; state_key is its string)
  rows_cte    the CTE holding the fact entity's live silver rows, e.g. 'sales'
  members     dict: dimension state model -> the columns of rows_cte holding its keys
-#}
{% macro fact_candidates(since, own_state, key, rows_cte, members) -%}
{#- one `in (subquery)` per member column: Spark plans each as a hash (existence) join with the
    few changed members, where one join on an `or` of conditions was a nested loop over every row -#}
{%- set member_predicates = [] -%}
{%- for state, columns in members.items() -%}
    {%- for column in columns -%}
        {%- do member_predicates.append(
            'cast(' ~ rows_cte ~ '.' ~ column ~ ' as string) in (\n'
            ~ '            select state_key from changed_states where parent = \'' ~ state ~ '\' and not is_truncate\n'
            ~ '        )') -%}
    {%- endfor -%}
{%- endfor -%}
changed_states as (

    select '{{ own_state }}' as parent, state_key, is_truncate
    from {{ ref(own_state) }}
    where bronze_commit_time > '{{ since[own_state] }}'
    {%- for state in members %}
    union all
    select '{{ state }}' as parent, state_key, is_truncate
    from {{ ref(state) }}
    where bronze_commit_time > '{{ since[state] }}'
    {%- endfor %}

),

any_truncate as (

    select coalesce(max(is_truncate), false) as truncated from changed_states

),

candidates as (

    select cast(state_key as int) as {{ key }}
    from changed_states
    where parent = '{{ own_state }}' and not is_truncate
    union
    select {{ rows_cte }}.{{ key }}
    from {{ rows_cte }}
    where
        {{ member_predicates | join('\n        or ') }}
    union
    select {{ rows_cte }}.{{ key }}
    from {{ rows_cte }} cross join any_truncate
    where any_truncate.truncated
    union
    select stored_keys.{{ key }}
    from {{ this }} as stored_keys cross join any_truncate
    where any_truncate.truncated

)
{%- endmacro %}


{#-
  The final select of a fact: on a full refresh its rows (`rows_cte`); on an incremental
  run, of the recomputed candidate rows those that differ from the stored rows
  (is_removed false), and the stored candidates no longer live (is_removed true: the
  merge deletes them, see spark__get_merge_sql).

  columns   the fact's columns, in the model's order
  key       the fact's key column
  rows_cte  the CTE holding the recomputed rows
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

changed as (

    select * from {{ rows_cte }}
    except
    select * from stored

)

select
    changed.*,
    false as is_removed
from changed
union all
select
    stored.*,
    true as is_removed
from stored
left anti join {{ rows_cte }} on stored.{{ key }} = {{ rows_cte }}.{{ key }}
{%- endif -%}
{%- endmacro %}
