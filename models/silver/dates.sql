{#- Live dates: the latest state of every date_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('dates_cdc_state'),
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
