{#- Latest change event per key, tombstones and latest truncate kept (see cdc_state). -#}
{{ cdc_state(
    ref('stg_ecomm__dates'),
    primary_key=['date_id'],
    columns=[
        'date_id',
        'calendar_date',
        'day_of_week',
        'week_of_year',
        'month_name',
        'quarter',
        'year',
        'is_holiday',
    ],
) }}
