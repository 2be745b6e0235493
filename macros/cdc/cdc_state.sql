{#-
  Body of a silver CDC state model: the latest change event of every key, tombstones and
  the latest truncate included (the published silver view filters them, see
  cdc_live_rows). Ordered by the source position `cdc_position`, never by arrival, so a
  late older event can never overwrite newer state or resurrect a deleted key.

  staging       the staging relation (ref) holding the change events
  primary_key   list of primary-key columns of the entity
  columns       list of entity columns to keep (in order)

  Incremental run (is_incremental()): reads only staging rows of bronze commits newer
  than the model's watermark (cdc_watermark, a table property); dedupes them together with the current
  state rows of the keys they touch (the sort covers the changed keys only), and
    - on parquet (insert_overwrite, partition_by key_bucket): returns those winners plus
      the unchanged rows of the touched buckets, so each touched bucket is rewritten
      whole and the other buckets are left alone;
    - on hudi (merge, unique_key state_key): returns the winners, merged on state_key.
  A full refresh dedupes the whole change log, which gives the same rows.
-#}
{% macro cdc_state(staging, primary_key, columns) -%}
{%- set state_columns = columns + cdc_state_metadata_columns() -%}
with

changes as (

    select
        {{ columns | join(',\n        ') }},
        cdc_op,
        is_deleted,
        is_truncate,
        cdc_position,
        cdc_source_ts,
        bronze_commit_time,
        {{ cdc_state_key(primary_key) }} as state_key,
        {{ cdc_key_bucket(cdc_state_key(primary_key)) }} as key_bucket
    from {{ staging }}
    {%- if is_incremental() %}
    where bronze_commit_time > {{ cdc_watermark(this) }}
    {%- endif %}

),

{% if is_incremental() -%}
changed_keys as (

    select distinct state_key, key_bucket
    from changes

),

current_of_changed_keys as (

    select {{ state_columns | join(', ') }}
    from {{ this }}
    where
        key_bucket in (select changed_keys.key_bucket from changed_keys)
        and state_key in (select changed_keys.state_key from changed_keys)

),

candidates as (

    select {{ state_columns | join(', ') }} from changes
    union all
    select {{ state_columns | join(', ') }} from current_of_changed_keys

),
{%- else -%}
candidates as (

    select {{ state_columns | join(', ') }} from changes

),
{%- endif %}

latest as (

    {{ dedupe(
        'candidates',
        partition_by=['state_key'],
        order_by=['cdc_position desc', 'bronze_commit_time desc'],
        columns=state_columns,
    ) | indent(4) }}

)

{%- if is_incremental() and var('table_format', 'parquet') != 'hudi' %},

{#- insert_overwrite replaces whole buckets: the touched buckets' other keys are rewritten as they are #}
unchanged_in_touched_buckets as (

    select {{ state_columns | join(', ') }}
    from {{ this }} as current_state
    left anti join changed_keys on current_state.state_key = changed_keys.state_key
    where current_state.key_bucket in (select changed_keys.key_bucket from changed_keys)

)

select * from latest
union all
select * from unchanged_in_touched_buckets
{%- else %}

select * from latest
{%- endif %}
{%- endmacro %}


{#- Change-metadata columns a state table keeps after the entity columns. -#}
{% macro cdc_state_metadata_columns() -%}
    {{ return([
        'cdc_op', 'is_deleted', 'is_truncate', 'cdc_position', 'cdc_source_ts',
        'bronze_commit_time', 'state_key', 'key_bucket',
    ]) }}
{%- endmacro %}


{#-
  The state key: the primary key as one string ('|'-joined), or the constant
  '<truncate>' for table-level truncate rows (whose key columns are null), so the
  latest truncate is kept as one row.
-#}
{% macro cdc_state_key(primary_key) -%}
    case
        when is_truncate then '<truncate>'
        else concat_ws('|', {% for col in primary_key %}cast({{ col }} as string){{ ', ' if not loop.last }}{% endfor %})
    end
{%- endmacro %}


{#- Key bucket of a state key: pmod(hash(key), var('silver_key_buckets')). -#}
{% macro cdc_key_bucket(key_expression) -%}
    pmod(hash({{ key_expression }}), {{ var('silver_key_buckets') }})
{%- endmacro %}


{#-
  Body of a published silver relation: the live rows of a state table. Drops
  tombstones, the truncate row itself, and every key whose latest position is older
  than the latest truncate.

  state     the state relation (ref)
  columns   list of entity columns to publish
-#}
{% macro cdc_live_rows(state, columns) -%}
with

state_rows as (

    select * from {{ state }}

),

last_truncate as (

    select max(cdc_position) as truncated_before
    from state_rows
    where is_truncate

),

live as (

    select
        {{ columns | join(',\n        ') }},
        state_rows.cdc_position,
        state_rows.cdc_source_ts as last_changed_at,
        state_rows.bronze_commit_time
    from state_rows
    cross join last_truncate
    where
        not state_rows.is_truncate
        and not state_rows.is_deleted
        and (
            last_truncate.truncated_before is null
            or state_rows.cdc_position > last_truncate.truncated_before
        )

)

select * from live
{%- endmacro %}
