{#- Fails when `column_name` has no non-null value at all (an empty or all-null column). -#}
{% test at_least_one(model, column_name) %}

select non_null_values
from (select count({{ column_name }}) as non_null_values from {{ model }}) as counted
where non_null_values = 0

{% endtest %}
