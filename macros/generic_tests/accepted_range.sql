{#-
  Fails for every non-null value of `column_name` outside [min_value, max_value]
  (bounds optional; `inclusive=false` makes them strict).
-#}
{% test accepted_range(model, column_name, min_value=none, max_value=none, inclusive=true) %}

select *
from {{ model }}
where
    {{ column_name }} is not null
    and (
        false
        {%- if min_value is not none %}
        or {{ column_name }} {{ '<' if inclusive else '<=' }} {{ min_value }}
        {%- endif %}
        {%- if max_value is not none %}
        or {{ column_name }} {{ '>' if inclusive else '>=' }} {{ max_value }}
        {%- endif %}
    )

{% endtest %}
