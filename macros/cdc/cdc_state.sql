{#-
  Body of a silver CDC state model: the latest change event of every key, tombstones and
  the latest truncate included (the published silver view filters them, see
  cdc_live_rows). Ordered by the source position `cdc_position`, never by arrival, so a
  late older event can never overwrite newer state or resurrect a deleted key.

  staging       the staging relation (ref) holding the change events
  primary_key   list of primary-key columns of the entity
  columns       list of entity columns to keep (in order)

  On parquet (the embedded default) a state table has two layers, the partitions of
  `state_layer` (see the docs block silver_incremental):
    - `base`: written by a full refresh and by compaction (compact_cdc_state);
    - `delta`: the latest event of every key changed since the last compaction.
  An incremental run reads only staging rows of bronze commits newer than the model's
  watermark (cdc_watermark, a table property), dedupes them together with the delta
  rows, and the cdc_state materialization (macros/materializations/cdc_state.sql)
  rewrites the `delta` partition alone: the base layer is
  neither read nor written, so the cost follows the changes, not the table, even when
  the changes are spread over every key. Per key, the current row is whichever of its
  base and delta rows has the larger position (cdc_current_state), so a late older
  event that lands in the delta never wins over newer base state.
  On hudi (cluster-only) every row is in `base`: the changes are deduped together with
  the current rows of the keys they touch and merged on state_key.
  A full refresh dedupes the whole change log into `base`, which gives the same rows.
-#}
{% macro cdc_state(staging, primary_key, columns) -%}
{%- set state_columns = columns + cdc_state_metadata_columns() -%}
{#- the cdc_state materialization names these columns when it writes the delta layer -#}
{%- do config(cdc_state_columns=state_columns) -%}
{%- set incremental = cdc_state_is_incremental() -%}
{%- set layered = incremental and var('table_format', 'parquet') != 'hudi' -%}
{%- set watermark = cdc_watermark(this) if incremental else "''" -%}
{#- the bronze window (watermark, synced instant]: see cdc_source_instant -#}
{%- set upper_bound = cdc_source_instant() if incremental else none -%}
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
        {{ cdc_state_key(primary_key) }} as state_key
    from {{ staging }}
    {%- if incremental %}
    where bronze_commit_time > {{ watermark }}
    {%- if upper_bound is not none %}
        and bronze_commit_time <= '{{ upper_bound }}' {{ cdc_window_comment(watermark[1:-1], upper_bound) }}
    {%- endif %}
    {%- endif %}

),

{% if layered -%}
candidates as (

    select {{ state_columns | join(', ') }} from changes
    union all
    select {{ state_columns | join(', ') }}
    from {{ this }} as current_state
    where current_state.state_layer = 'delta'

),
{%- elif incremental -%}
changed_keys as (

    select distinct state_key
    from changes

),

candidates as (

    select {{ state_columns | join(', ') }} from changes
    union all
    select {{ state_columns | join(', ') }}
    from {{ this }} as current_state
    where current_state.state_key in (select changed_keys.state_key from changed_keys)

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

select
    {{ state_columns | join(',\n    ') }},
    '{{ "delta" if layered else "base" }}' as state_layer
from latest
{%- endmacro %}


{#- Change-metadata columns a state table keeps after the entity columns (state_layer last). -#}
{% macro cdc_state_metadata_columns() -%}
    {{ return([
        'cdc_op', 'is_deleted', 'is_truncate', 'cdc_position', 'cdc_source_ts',
        'bronze_commit_time', 'state_key',
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


{#-
  The current row of every key of a layered state table: of its base and delta rows,
  the one with the larger (cdc_position, bronze_commit_time), the order of the dedupe.
  The two anti joins are complementary, so exactly one row per key is kept.

  Each anti join's right side is small, so Spark broadcasts it and scans the base layer
  without a shuffle: the delta layer itself, and the base rows of the keys the delta
  holds (a semi join against the broadcast delta). Anti-joining the delta against the
  whole base layer instead made Spark broadcast (or shuffle) every base row on every read
  of a silver view, even with an empty delta: ~0.25 s of each ~0.7 s read at scale 1.0.

  state     the state relation (ref)
-#}
{% macro cdc_current_state(state) -%}
    select delta_rows.*
    from {{ state }} as delta_rows
    left anti join (
        select
            base_candidates.state_key,
            base_candidates.cdc_position,
            base_candidates.bronze_commit_time
        from {{ state }} as base_candidates
        left semi join {{ state }} as delta_keys
            on
                base_candidates.state_key = delta_keys.state_key
                and delta_keys.state_layer = 'delta'
        where base_candidates.state_layer = 'base'
    ) as base_rows
        on
            delta_rows.state_key = base_rows.state_key
            and (
                base_rows.cdc_position > delta_rows.cdc_position
                or (
                    base_rows.cdc_position = delta_rows.cdc_position
                    and base_rows.bronze_commit_time > delta_rows.bronze_commit_time
                )
            )
    where delta_rows.state_layer = 'delta'
    union all
    select base_rows.*
    from {{ state }} as base_rows
    left anti join {{ state }} as delta_rows
        on
            base_rows.state_key = delta_rows.state_key
            and delta_rows.state_layer = 'delta'
            and (
                delta_rows.cdc_position > base_rows.cdc_position
                or (
                    delta_rows.cdc_position = base_rows.cdc_position
                    and delta_rows.bronze_commit_time >= base_rows.bronze_commit_time
                )
            )
    where base_rows.state_layer = 'base'
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

    {{ cdc_current_state(state) | indent(4) }}

),

{#- the latest truncate is the truncate row with the largest position in either layer #}
last_truncate as (

    select max(truncates.cdc_position) as truncated_before
    from {{ state }} as truncates
    where truncates.state_key = '<truncate>'

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
