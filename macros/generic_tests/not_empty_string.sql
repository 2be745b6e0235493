{#- Fails for every row where string column `column_name` is empty or only blanks. -#}
{% test not_empty_string(model, column_name) %}

select *
from {{ model }}
where trim({{ column_name }}) = ''

{% endtest %}
