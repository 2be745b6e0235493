{#-
  Body of a silver CDC state model: the latest change event of every key (tombstones and
  the latest truncate included; the published silver view filters them, see
  cdc_live_rows). The state model is an incremental Hudi table merged on `state_key`
  whose ordering field is `cdc_order` (dbt_project.yml): Hudi keeps, per key, the row
  with the larger Kafka offset (truncate rows: source position), so a late older event
  never overwrites newer state or resurrects a deleted key, whatever order the merges
  run in. Ties (one offset in two partitions, which a dbt test reports) fall back to
  the source position, then the bronze commit.

  An incremental run reads only the change events of bronze commits newer than the
  state's watermark (cdc_state_watermark), keeps the latest of each key among them,
  and merges those into the state. A full refresh dedupes the whole change log.

  Unchanged TOASTed values: a PostgreSQL UPDATE that leaves a large (TOASTed) value alone
  does not send it when the table's REPLICA IDENTITY is not FULL; Debezium puts its
  placeholder there (var `debezium_unavailable_value`). For each of `toastable_columns`
  the state keeps the key's last value that was not the placeholder: from this run's
  events, else the stored state row, else null. The placeholder never reaches silver.

  staging            the staging relation (ref) holding the change events
  primary_key        list of primary-key columns of the entity
  columns            list of entity columns to keep (in order)
  toastable_columns  entity columns Debezium may send as its placeholder (PostgreSQL
                     string columns); default none
-#}
{% macro cdc_state(staging, primary_key, columns, toastable_columns=[]) -%}
{#- columns the source added beyond the contract come last (macros/cdc/cdc_added_columns.sql) -#}
{%- set added = cdc_added_relation_columns(staging, columns) -%}
{%- if is_incremental() -%}
    {%- do cdc_check_state_table(this) -%}
{%- endif -%}
{%- set state_columns = columns + cdc_state_metadata_columns() + added -%}
{%- set order_by = ['cdc_order desc', 'cdc_position desc', 'bronze_commit_time desc'] -%}
{%- set placeholder = var('debezium_unavailable_value') -%}
{%- set known_columns = [] -%}
{%- for column in toastable_columns -%}
    {%- do known_columns.append(column ~ '__known') -%}
{%- endfor -%}
with

changes as (

    select
        {{ (columns + added) | join(',\n        ') }},
        cdc_op,
        is_deleted,
        is_truncate,
        cdc_position,
        cdc_order,
        cdc_source_ts,
        bronze_commit_time,
        {{ cdc_state_key(primary_key) }} as state_key
    from {{ staging }}
    {%- if is_incremental() %}
    where bronze_commit_time > '{{ cdc_state_watermark(this) }}'
    {%- endif %}

),

{%- if toastable_columns %}

known_values as (

    select
        *,
        {%- for column in toastable_columns %}
        {#- the newest value that is not the placeholder, from this row back (a struct, so a
            real null counts as a value and only the placeholder is skipped) #}
        first_value(
            case when {{ column }} = '{{ placeholder }}' then null else named_struct('value', {{ column }}) end,
            true
        ) over (
            partition by state_key
            order by {{ order_by | join(', ') }}
            rows between current row and unbounded following
        ) as {{ column }}__known{{ ',' if not loop.last }}
        {%- endfor %}
    from changes

),
{%- endif %}

latest as (

    {{ dedupe(
        'known_values' if toastable_columns else 'changes',
        partition_by=['state_key'],
        order_by=order_by,
        columns=state_columns + known_columns,
    ) | indent(4) }}

)

select
    {%- for column in state_columns %}
    {%- if column in toastable_columns %}
    case
        when latest.{{ column }}__known is not null then latest.{{ column }}__known.value
        {%- if is_incremental() %}
        else stored.{{ column }}
        {%- endif %}
    end as {{ column }}{{ ',' if not loop.last }}
    {%- else %}
    latest.{{ column }}{{ ',' if not loop.last }}
    {%- endif %}
    {%- endfor %}
from latest
{%- if toastable_columns and is_incremental() %}
left join {{ this }} as stored on latest.state_key = stored.state_key
{%- endif %}
{%- endmacro %}


{#-
  A state table built before its rows were ordered by `cdc_order` cannot be merged into:
  Hudi keeps the ordering field a table was created with. `on_schema_change:
  sync_all_columns` would add the column; this stops the run instead, naming the rebuild.
-#}
{% macro cdc_check_state_table(relation) -%}
    {%- if execute and model.resource_type != 'unit_test' -%}
        {#- `select`: a unit test's `this` (its given rows) may list a column without a name -#}
        {%- set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | select | map('lower') | list -%}
        {%- if names and 'cdc_order' not in names -%}
            {%- do exceptions.raise_compiler_error(
                relation ~ ' predates the cdc_order ordering field: rebuild the state tables once with '
                ~ "'lakehouse dbt build --full-refresh --select tag:cdc_state+' (docs/runbook.md)") -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}


{#- Change-metadata columns a state table keeps after the entity columns. -#}
{% macro cdc_state_metadata_columns() -%}
    {{ return([
        'cdc_op', 'is_deleted', 'is_truncate', 'cdc_position', 'cdc_order', 'cdc_source_ts',
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
  Body of a published silver relation: the live rows of a state table (cdc_is_live).

  state     the state relation (ref)
  columns   list of entity columns to publish
-#}
{% macro cdc_live_rows(state, columns) -%}
{%- set columns = columns + cdc_added_relation_columns(state, columns) -%}
with

last_truncate as (

    {{ cdc_last_truncate(state) | indent(4) }}

),

live as (

    select
        {%- for column in columns %}
        state_rows.{{ column }},
        {%- endfor %}
        state_rows.cdc_position,
        state_rows.cdc_source_ts as last_changed_at,
        state_rows.bronze_commit_time
    from {{ state }} as state_rows
    cross join last_truncate
    where {{ cdc_is_live('state_rows', 'last_truncate') }}

)

select * from live
{%- endmacro %}


{#- The position of a state table's latest truncate (`truncated_before`; null if none), as a one-row query. -#}
{% macro cdc_last_truncate(state) -%}
select max(truncates.cdc_position) as truncated_before
from {{ state }} as truncates
where truncates.state_key = '<truncate>'
{%- endmacro %}


{#-
  The CDC rule of a live row, the one statement of it (silver views, incremental facts): a
  state row is live unless it is a tombstone, the truncate row itself, or a key whose
  latest position is older than the latest truncate. Positions, not offsets: a truncate
  has no key and may sit in another Kafka partition.

  state_rows     alias of the state rows
  last_truncate  alias of the one-row cdc_last_truncate query
-#}
{% macro cdc_is_live(state_rows, last_truncate) -%}
not {{ state_rows }}.is_truncate
        and not {{ state_rows }}.is_deleted
        and (
            {{ last_truncate }}.truncated_before is null
            or {{ state_rows }}.cdc_position > {{ last_truncate }}.truncated_before
        )
{%- endmacro %}
