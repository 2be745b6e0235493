{#-
  Fails when more than `max_share` of the rows of `model` point in `column_name` at the
  unknown member (var unknown_member_key) or at an inferred member of `dimension` (a key it
  holds with `is_inferred_member`): a few are expected with CDC (late dimension rows), a
  large share means a broken key. The dimension's key column is named as `column_name`.
-#}
{% test unknown_member_share(model, column_name, dimension, max_share=0.05) %}

with

inferred as (

    select {{ column_name }} as member_key
    from {{ dimension }}
    where is_inferred_member

)

select
    unknown_rows,
    all_rows
from (
    select
        count_if(
            rows_.{{ column_name }} = {{ var('unknown_member_key') }} or inferred.member_key is not null
        ) as unknown_rows,
        count(*) as all_rows
    from {{ model }} as rows_
    left join inferred on rows_.{{ column_name }} = inferred.member_key
) as counted
where all_rows > 0 and unknown_rows > {{ max_share }} * all_rows

{% endtest %}
