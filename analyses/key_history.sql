-- Audit: the full change history of one sale, in the order silver applies it, with the
-- bronze commit that stored each event.
-- Compile with `dbt compile -s key_history --vars '{sale_id: 42}'`.
select
    sale_id,
    cdc_op,
    is_deleted,
    cdc_order,
    cdc_position,
    cdc_source_ts,
    bronze_commit_time,
    qty_sold,
    price_paid
from {{ ref('stg_ecomm__sales') }}
where sale_id = {{ var('sale_id', 1) }}
order by cdc_order
