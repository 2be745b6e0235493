-- Do stated preferences predict purchases? Share of each category group's tickets bought
-- by users who like sports, theatre or concerts.
select
    categories.category_group,
    round(avg(case when users.likes_sports then 1.0 else 0.0 end), 3) as share_likes_sports,
    round(avg(case when users.likes_theatre then 1.0 else 0.0 end), 3) as share_likes_theatre,
    round(avg(case when users.likes_concerts then 1.0 else 0.0 end), 3) as share_likes_concerts,
    sum(sales.qty_sold) as tickets
from {{ ref('fct_sales') }} as sales
inner join {{ ref('dim_users') }} as users on sales.buyer_id = users.user_id
inner join {{ ref('dim_events') }} as events on sales.event_id = events.event_id
inner join {{ ref('dim_categories') }} as categories on events.category_id = categories.category_id
where not users.is_unknown_member and not users.is_inferred_member
group by categories.category_group
order by tickets desc
