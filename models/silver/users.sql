{#- Live users: the latest state of every user_id that is not deleted or truncated. -#}
{{ cdc_live_rows(
    ref('users_cdc_state'),
    columns=[
        'user_id',
        'username',
        'first_name',
        'last_name',
        'city',
        'state',
        'email',
        'phone',
        'likes_sports',
        'likes_theatre',
        'likes_concerts',
        'likes_jazz',
        'likes_classical',
        'likes_opera',
        'likes_rock',
        'likes_vegas',
        'likes_broadway',
        'likes_musicals',
    ],
) }}
