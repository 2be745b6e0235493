-- Late events per table: change events stored in a later bronze commit than an event of
-- the same key with a larger cdc_order (they arrived out of order). Silver ignores
-- them; many of them point at a connector or landing problem.
with

sales as (

    select
        sale_id,
        cdc_order,
        bronze_commit_time,
        max(cdc_order) over (
            partition by sale_id
            order by bronze_commit_time
            rows between unbounded preceding and 1 preceding
        ) as largest_earlier_order
    from {{ ref('stg_ecomm__sales') }}
    where not is_truncate

)

select
    bronze_commit_time,
    count(*) as late_events
from sales
where cdc_order < largest_earlier_order
group by bronze_commit_time
order by bronze_commit_time
