{#-
  Fails when the newest value of timestamp column `field` is older than `interval`
  `datepart`s before now (UTC), or when the model is empty.
-#}
{% test recency(model, field, datepart, interval) %}
{%- set intervals = {
    'day': [interval, 0, 0, 0],
    'hour': [0, interval, 0, 0],
    'minute': [0, 0, interval, 0],
} -%}
{%- if datepart not in intervals -%}
    {{ exceptions.raise_compiler_error("recency: datepart must be day, hour or minute, got " ~ datepart) }}
{%- endif %}

select max_value
from (select max({{ field }}) as max_value from {{ model }}) as newest
where
    max_value is null
    or max_value < current_timestamp() - make_dt_interval({{ intervals[datepart] | join(', ') }})

{% endtest %}
