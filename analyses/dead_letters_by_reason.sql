-- Ingestion health: dead-lettered lines per topic and reason, newest first.
select
    kafka_topic,
    reason,
    count(*) as lines,
    min(dead_lettered_at) as first_seen_at,
    max(dead_lettered_at) as last_seen_at
from {{ ref('stg_ingestion__dead_letters') }}
group by kafka_topic, reason
order by last_seen_at desc
