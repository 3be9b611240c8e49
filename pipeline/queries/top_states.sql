-- name: top_states
-- description: The best states where play goes on, by optimal value (the Scala simulator's "top states" table).
-- inputs: states
-- grain: one row per non-terminal state; the best `top` of them
-- output: tiles, value (per the variant's objective: P(shut) or expected score), n_open, open_sum; best first
-- param: variant variant default classic
-- param: top int 1..1000000 default 10
with params as (
    select
        coalesce(getvariable('variant'), 'classic') as variant,
        coalesce(getvariable('top'), 10) as top
),

playing as (
    select s.tiles, s.value, s.n_open, s.open_sum, s.maximise
    from states as s
    join params using (variant)
    where not s.terminal
),

ranked as (
    select
        *,
        row_number() over (
            order by case when maximise then -value else value end, n_open, tiles
        ) as place
    from playing
),

final as (
    select place, tiles, value, n_open, open_sum
    from ranked
    where place <= (select top from params)
    order by place
)

select * from final
