-- The number of keys in each silver relation equals the number of live keys derived
-- straight from bronze (staging): keys whose latest event is not a delete and is newer
-- than the table's latest truncate. An independent re-derivation of the silver logic.
{%- set entities = [
    ('users', 'stg_crm__users', 'user_id'),
    ('venues', 'stg_ems__venues', 'venue_id'),
    ('categories', 'stg_ems__categories', 'category_id'),
    ('events', 'stg_ems__events', 'event_id'),
    ('dates', 'stg_ecomm__dates', 'date_id'),
    ('listings', 'stg_ecomm__listings', 'listing_id'),
    ('sales', 'stg_ecomm__sales', 'sale_id'),
] %}
{% for silver, staging, key in entities %}
    select
        '{{ silver }}' as entity,
        expected_keys,
        actual_keys
    from (
        select count(*) as expected_keys
        from (
            select
                {{ key }},
                max_by(is_deleted, cdc_position) as latest_is_delete,
                max(cdc_position) as latest_position
            from {{ ref(staging) }}
            where not is_truncate
            group by {{ key }}
        ) as per_key
        where not latest_is_delete
            and latest_position > coalesce(
                (
                    select max(cdc_position) from {{ ref(staging) }}
                    where is_truncate
                ), ''
            )
    ) as expected
    cross join (select count(*) as actual_keys from {{ ref(silver) }}) as actual
    where expected_keys <> actual_keys
    {% if not loop.last %}union all{% endif %}
{% endfor %}
