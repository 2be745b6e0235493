with

users as (

    select * from {{ ref('users') }}

),

sales as (

    select * from {{ ref('fct_sales') }}

),

listings as (

    select * from {{ ref('fct_listings') }}

),

states as (

    select * from {{ ref('us_states') }}

),

first_purchases as (

    select
        buyer_id as user_id,
        to_date(min(sale_time)) as first_purchase_date
    from sales
    group by buyer_id

),

first_sales as (

    select
        seller_id as user_id,
        to_date(min(sale_time)) as first_sale_date
    from sales
    group by seller_id

),

inferred_users as (

    {{ inferred_member_keys(
        'user_id', 'users', [['sales', 'buyer_id'], ['sales', 'seller_id'], ['listings', 'seller_id']]
    ) }}

),

members as (

    select
        user_id,
        false as is_inferred_member
    from users
    union all
    select
        user_id,
        true as is_inferred_member
    from inferred_users

),

resolved_users as (

    select

        ----------  ids
        members.user_id,

        ----------  strings
        coalesce(users.username, 'unknown') as username,
        if(
            members.is_inferred_member,
            'Unknown user',
            concat_ws(', ', users.last_name, users.first_name)
        ) as full_name,
        users.first_name,
        users.last_name,
        users.city,
        users.state,
        states.region,
        users.email,
        users.phone,

        ----------  booleans
        users.likes_sports,
        users.likes_theatre,
        users.likes_concerts,
        users.likes_jazz,
        users.likes_classical,
        users.likes_opera,
        users.likes_rock,
        users.likes_vegas,
        users.likes_broadway,
        users.likes_musicals,
        first_purchases.user_id is not null as is_buyer,
        first_sales.user_id is not null as is_seller,
        false as is_unknown_member,
        members.is_inferred_member,

        ----------  dates
        first_purchases.first_purchase_date,
        first_sales.first_sale_date,
        users.last_changed_at

    from members
    left join users on members.user_id = users.user_id
    left join states on users.state = states.state_code
    left join first_purchases on members.user_id = first_purchases.user_id
    left join first_sales on members.user_id = first_sales.user_id

),

unknown_member as (

    select
        {{ var('unknown_member_key') }} as user_id,
        'unknown' as username,
        'Unknown user' as full_name,
        cast(null as string) as first_name,
        cast(null as string) as last_name,
        cast(null as string) as city,
        cast(null as string) as state,
        cast(null as string) as region,
        cast(null as string) as email,
        cast(null as string) as phone,
        cast(null as boolean) as likes_sports,
        cast(null as boolean) as likes_theatre,
        cast(null as boolean) as likes_concerts,
        cast(null as boolean) as likes_jazz,
        cast(null as boolean) as likes_classical,
        cast(null as boolean) as likes_opera,
        cast(null as boolean) as likes_rock,
        cast(null as boolean) as likes_vegas,
        cast(null as boolean) as likes_broadway,
        cast(null as boolean) as likes_musicals,
        false as is_buyer,
        false as is_seller,
        true as is_unknown_member,
        false as is_inferred_member,
        cast(null as date) as first_purchase_date,
        cast(null as date) as first_sale_date,
        cast(null as timestamp) as last_changed_at

)

select * from resolved_users
union all
select * from unknown_member
