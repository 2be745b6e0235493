-- The number of keys in each silver relation equals the number of live keys derived
-- straight from bronze (staging): keys whose latest event (largest cdc_order) is not a
-- delete and whose source position is newer than the table's latest truncate. An
-- independent re-derivation of the silver logic.
{%- set entities = [
    ('users', 'stg_crm__users', 'user_id'),
    ('venues', 'stg_ems__venues', 'venue_id'),
    ('categories', 'stg_ems__categories', 'category_id'),
    ('events', 'stg_ems__events', 'event_id'),
    ('dates', 'stg_ecomm__dates', 'date_id'),
    ('listings', 'stg_ecomm__listings', 'listing_id'),
    ('sales', 'stg_ecomm__sales', 'sale_id'),
] %}
with
{% for silver, staging, key in entities %}
    {{ silver }}_latest_truncate as (

        select coalesce(max(cdc_position), '') as truncated_before
        from {{ ref(staging) }}
        where is_truncate

    ),

    {{ silver }}_per_key as (

        select
            {{ key }},
            max_by(is_deleted, cdc_order) as latest_is_delete,
            max_by(cdc_position, cdc_order) as latest_position
        from {{ ref(staging) }}
        where not is_truncate
        group by {{ key }}

    ),

    {{ silver }}_expected as (

        select count(*) as expected_keys
        from {{ silver }}_per_key
        cross join {{ silver }}_latest_truncate
        where
            not {{ silver }}_per_key.latest_is_delete
            and {{ silver }}_per_key.latest_position > {{ silver }}_latest_truncate.truncated_before

    ),

    {{ silver }}_actual as (

        select count(*) as actual_keys
        from {{ ref(silver) }}

    ),
{% endfor %}

comparison as (
    {% for silver, staging, key in entities %}
        select
            '{{ silver }}' as entity,
            {{ silver }}_expected.expected_keys,
            {{ silver }}_actual.actual_keys
        from {{ silver }}_expected
        cross join {{ silver }}_actual
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
)

select
    entity,
    expected_keys,
    actual_keys
from comparison
where expected_keys <> actual_keys
