{#-
  Fails when the newest value of timestamp column `field` is older than `interval`
  `datepart`s before now (UTC), or when the model is empty.
-#}
{% test recency(model, field, datepart, interval) %}

select max_value
from (select max({{ field }}) as max_value from {{ model }}) as newest
where max_value is null
   or max_value < current_timestamp() - make_dt_interval(
        {%- if datepart == 'day' -%} {{ interval }}, 0, 0, 0
        {%- elif datepart == 'hour' -%} 0, {{ interval }}, 0, 0
        {%- elif datepart == 'minute' -%} 0, 0, {{ interval }}, 0
        {%- else -%} {{ exceptions.raise_compiler_error("recency: datepart must be day, hour or minute, got " ~ datepart) }}
        {%- endif -%})

{% endtest %}
