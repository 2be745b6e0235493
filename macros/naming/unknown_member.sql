{#-
  Key of a looked-up dimension row, or the dimension's unknown member
  (var unknown_member_key, -1) when the lookup failed, so facts never lose rows.

  key_expression   the dimension key column of the joined dimension (e.g. buyers.user_id)
-#}
{% macro member_key(key_expression) -%}
    coalesce({{ key_expression }}, {{ var('unknown_member_key') }})
{%- endmacro %}


{#-
  The inferred members of a dimension: the keys its facts name that silver does not hold (a
  member that arrives late, or was deleted at the source), the unknown member's key left out.
  Facts keep the keys as the source gives them, so a fact row never changes when its member
  arrives or goes (models/gold/_gold__docs.md, `inferred_member`).

  key           the dimension's key column (e.g. user_id)
  members       the CTE or relation of the members silver holds, with a `key` column
  fact_columns  list of [relation, column] pairs: each fact column naming the dimension
-#}
{% macro inferred_member_keys(key, members, fact_columns) -%}
    select fact_keys.{{ key }}
    from (
        {%- for relation, column in fact_columns %}
        select {{ column }}{{ (' as ' ~ key) if column != key }} from {{ relation }}
        {%- if not loop.last %}
        union
        {%- endif %}
        {%- endfor %}
    ) as fact_keys
    left anti join {{ members }} on fact_keys.{{ key }} = {{ members }}.{{ key }}
    where fact_keys.{{ key }} != {{ var('unknown_member_key') }}
{%- endmacro %}
