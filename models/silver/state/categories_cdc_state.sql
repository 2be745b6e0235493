{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
{{ cdc_state(
    ref('stg_ems__categories'),
    primary_key=['category_id'],
    columns=[
        'category_id',
        'category_group',
        'category_name',
        'category_description',
    ],
) }}
