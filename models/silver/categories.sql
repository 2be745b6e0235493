{#- Live categories: the latest state of every category_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('categories_cdc_state'),
    columns=[
        'category_id',
        'category_group',
        'category_name',
        'category_description',
    ],
) }}
