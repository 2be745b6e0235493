{#- Fails for every row where `expression` is not true (NULL counts as a failure). -#}
{% test expression_is_true(model, expression, column_name=none) %}

select *
from {{ model }}
where not coalesce(({{ expression }}), false)

{% endtest %}
