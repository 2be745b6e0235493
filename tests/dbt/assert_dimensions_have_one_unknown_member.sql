-- Every dimension has exactly one unknown member, keyed var('unknown_member_key').
{%- set dims = [
    ('dim_users', 'user_id'),
    ('dim_venues', 'venue_id'),
    ('dim_categories', 'category_id'),
    ('dim_dates', 'date_id'),
    ('dim_events', 'event_id'),
] %}
{% for dim, key in dims %}
    select
        '{{ dim }}' as dimension,
        count(*) as unknown_members
    from {{ ref(dim) }}
    where is_unknown_member and {{ key }} = {{ var('unknown_member_key') }}
    having count(*) <> 1
    {% if not loop.last %}union all{% endif %}
{% endfor %}
