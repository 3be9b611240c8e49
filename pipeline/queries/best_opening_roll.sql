-- name: best_opening_roll
-- description: For each first roll, the best move from the full box and the value after it (the Scala simulator's table).
-- inputs: policy, states
-- grain: one row per roll possible from the start
-- output: roll, best_move, value_after (per the variant's objective), n_optimal; best value first
-- param: variant variant default classic
with params as (
    select coalesce(getvariable('variant'), 'classic') as variant
),

start as (
    -- the start state is the one with every tile open: the largest open sum
    select s.variant, s.state_id
    from states as s
    join params using (variant)
    qualify row_number() over (order by s.open_sum desc) = 1
),

final as (
    select p.roll, p.best_move, p.value as value_after, p.n_optimal
    from policy as p
    join start using (variant, state_id)
    where not p.stuck
    order by
        case when (select any_value(maximise) from states join params using (variant))
            then -p.value else p.value end,
        p.roll
)

select * from final
