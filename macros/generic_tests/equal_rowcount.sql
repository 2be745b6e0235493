{#- Fails when `model` and `compare_model` do not have the same number of rows. -#}
{% test equal_rowcount(model, compare_model) %}

with

model_count as (

    select count(*) as model_rows from {{ model }}

),

compare_count as (

    select count(*) as compare_rows from {{ compare_model }}

)

select
    model_count.model_rows,
    compare_count.compare_rows
from model_count
cross join compare_count
where model_count.model_rows <> compare_count.compare_rows

{% endtest %}
