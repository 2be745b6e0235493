{#- Fails when `model` and `compare_model` do not have the same number of rows. -#}
{% test equal_rowcount(model, compare_model) %}

select model_rows, compare_rows
from
    (select count(*) as model_rows from {{ model }}) as a
    cross join (select count(*) as compare_rows from {{ compare_model }}) as b
where model_rows <> compare_rows

{% endtest %}
