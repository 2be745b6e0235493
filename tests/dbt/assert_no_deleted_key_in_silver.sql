-- Every silver key whose latest bronze change (largest cdc_order) is a delete must be
-- absent from silver. Checked for users and sales straight from bronze (staging),
-- independently of the silver state tables.
with

latest_user_changes as (

    {{ dedupe(ref('stg_crm__users'), partition_by=['user_id'], order_by=['cdc_order desc'],
              columns=['user_id', 'is_deleted']) }}

),

latest_sale_changes as (

    {{ dedupe(ref('stg_ecomm__sales'), partition_by=['sale_id'], order_by=['cdc_order desc'],
              columns=['sale_id', 'is_deleted']) }}

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
