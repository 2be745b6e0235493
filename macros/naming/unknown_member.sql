{#-
  Key of a looked-up dimension row, or the dimension's unknown member
  (var unknown_member_key, -1) when the lookup failed, so facts never lose rows.

  key_expression   the dimension key column of the joined dimension (e.g. buyers.user_id)
-#}
{% macro member_key(key_expression) -%}
    coalesce({{ key_expression }}, {{ var('unknown_member_key') }})
{%- endmacro %}
