-- name: value_by_open_count_and_sum
-- description: Value of the states grouped by number of open tiles and their sum: range, mean, best and worst state.
-- inputs: states
-- grain: one row per (n_open, open_sum) of the variant's non-terminal states
-- output: n_open, open_sum, n_states, best_value, mean_value (unweighted), worst_value (per the variant's objective: P(shut), expected score, ...), best_tiles, worst_tiles; by n_open then open_sum
-- param: variant variant default classic
with params as (
    select coalesce(getvariable('variant'), 'classic') as variant
),

playable as (
    -- the shut box is terminal and has nothing to compare
    select
        s.n_open,
        s.open_sum,
        s.tiles,
        s.value,
        -- orient values so that larger is better whatever the objective
        case when s.maximise then s.value else -s.value end as merit
    from states as s
    join params using (variant)
    where not s.terminal
),

final as (
    select
        n_open,
        open_sum,
        count(*) as n_states,
        arg_max(value, merit) as best_value,
        avg(value) as mean_value,
        arg_min(value, merit) as worst_value,
        -- ties go to the first tiles string in text order, so the answer is deterministic
        first(tiles order by merit desc, tiles) as best_tiles,
        first(tiles order by merit, tiles) as worst_tiles
    from playable
    group by n_open, open_sum
    order by n_open, open_sum
)

select * from final
