{#-
  Fails when more than `max_share` of the rows of `model` point at the unknown member
  (var unknown_member_key) in `column_name`: a few failed lookups are expected with CDC
  (late dimension rows), a large share means a broken join.
-#}
{% test unknown_member_share(model, column_name, max_share=0.05) %}

select
    unknown_rows,
    all_rows
from (
    select
        count_if({{ column_name }} = {{ var('unknown_member_key') }}) as unknown_rows,
        count(*) as all_rows
    from {{ model }}
) as counted
where all_rows > 0 and unknown_rows > {{ max_share }} * all_rows

{% endtest %}
