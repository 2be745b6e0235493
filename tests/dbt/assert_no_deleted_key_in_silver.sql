-- Every silver key whose latest bronze change (largest cdc_order) is a delete must be
-- absent from silver. Checked for users and sales straight from bronze (staging),
-- independently of the silver state tables and of the dedupe macro they use.
with

latest_user_changes as (

    select
        user_id,
        max_by(is_deleted, cdc_order) as is_deleted
    from {{ ref('stg_crm__users') }}
    where not is_truncate
    group by user_id

),

latest_sale_changes as (

    select
        sale_id,
        max_by(is_deleted, cdc_order) as is_deleted
    from {{ ref('stg_ecomm__sales') }}
    where not is_truncate
    group by sale_id

)

select
    'users' as entity,
    users.user_id as key_value
from {{ ref('users') }} as users
inner join latest_user_changes on users.user_id = latest_user_changes.user_id
where latest_user_changes.is_deleted

union all

select
    'sales' as entity,
    sales.sale_id as key_value
from {{ ref('sales') }} as sales
inner join latest_sale_changes on sales.sale_id = latest_sale_changes.sale_id
where latest_sale_changes.is_deleted
