with

categories as (

    select * from {{ ref('categories') }}

),

display as (

    select * from {{ ref('category_display') }}

),

known_categories as (

    select
        categories.category_id,
        categories.category_group,
        categories.category_name,
        categories.category_description,
        coalesce(display.display_name, categories.category_name) as display_name,
        display.display_order,
        display.colour,
        false as is_unknown_member,
        categories.last_changed_at
    from categories
    left join display on categories.category_name = display.category_name

),

unknown_member as (

    select
        {{ var('unknown_member_key') }} as category_id,
        'Unknown' as category_group,
        'Unknown' as category_name,
        'Unknown category' as category_description,
        'Unknown category' as display_name,
        cast(null as int) as display_order,
        cast(null as string) as colour,
        true as is_unknown_member,
        cast(null as timestamp) as last_changed_at

)

select * from known_categories
union all
select * from unknown_member
