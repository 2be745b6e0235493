{#-
  Keep one row per `partition_by` key: the first in `order_by` order (a row_number()
  dedupe; rows with NULL keys form their own group, nothing is dropped by a join).

  relation      a relation or a CTE name
  partition_by  list of key expressions
  order_by      list of order expressions, e.g. ['cdc_position desc']
  columns       list of columns to return (default: every column but the row number)
-#}
{% macro dedupe(relation, partition_by, order_by, columns=none) -%}
    select
        {{ columns | join(',\n        ') if columns else '*' }}
    from (
        select
            *,
            row_number() over (
                partition by {{ partition_by | join(', ') }}
                order by {{ order_by | join(', ') }}
            ) as dedupe_row_number
        from {{ relation }}
    ) as ranked
    where dedupe_row_number = 1
{%- endmacro %}
