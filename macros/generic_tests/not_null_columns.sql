{#-
  Fails once per listed column that holds a NULL, with the count of NULL rows: the
  `not_null` checks of several columns in one scan of the model.
-#}
{% test not_null_columns(model, columns) %}

with null_counts as (

    select
        {%- for column in columns %}
        count_if(`{{ column }}` is null) as `{{ column }}`{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ model }}

)

select
    null_columns.column_name,
    null_columns.null_rows
from null_counts
    lateral view stack(
        {{ columns | length }},
        {%- for column in columns %}
        '{{ column }}', `{{ column }}`{{ ',' if not loop.last }}
        {%- endfor %}
    ) null_columns as column_name, null_rows
where null_columns.null_rows > 0

{% endtest %}
