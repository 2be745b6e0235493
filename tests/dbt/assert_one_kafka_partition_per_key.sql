-- Silver orders a key's changes by Kafka offset (cdc_order), which is only meaningful
-- within one partition of one topic. A key whose changes sit in more than one
-- (topic, partition) means the topic's partition count changed, the topic was
-- recreated, or the table moved to another topic: its order cannot be decided from
-- offsets. Rebuild that table's bronze from the new topic (docs/runbook.md).
{%- set entities = [
    ('stg_crm__users', 'user_id'),
    ('stg_ems__venues', 'venue_id'),
    ('stg_ems__categories', 'category_id'),
    ('stg_ems__events', 'event_id'),
    ('stg_ecomm__dates', 'date_id'),
    ('stg_ecomm__listings', 'listing_id'),
    ('stg_ecomm__sales', 'sale_id'),
] %}
{% for staging, key in entities %}
    select
        '{{ staging }}' as staging_model,
        cast({{ key }} as string) as key_value,
        count(distinct kafka_topic, kafka_partition) as kafka_partitions
    from {{ ref(staging) }}
    where not is_truncate
    group by {{ key }}
    having count(distinct kafka_topic, kafka_partition) > 1
    {% if not loop.last %}union all{% endif %}
{% endfor %}
