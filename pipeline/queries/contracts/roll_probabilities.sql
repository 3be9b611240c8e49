-- name: contracts/roll_probabilities
-- description: Each (state, dice) rolls with probabilities in (0, 1] that sum to 1 (within 1e-12), one probability per roll.
-- inputs: edges
-- grain: one row per (variant, state_id, dice) whose roll distribution is wrong
-- output: variant, state_id, dice, n_rolls, total_prob, problem
-- param: variant variant optional
with chosen as (
    select *
    from edges
    where getvariable('variant') is null or variant = getvariable('variant')
),

rolls as (
    -- every move row of a roll repeats the roll's probability
    select variant, state_id, dice, roll, min(prob) as prob, max(prob) - min(prob) as spread
    from chosen
    group by variant, state_id, dice, roll
),

by_choice as (
    select
        variant, state_id, dice,
        count(*) as n_rolls,
        sum(prob) as total_prob,
        max(spread) as spread,
        bool_or(prob is null or not (prob > 0 and prob <= 1)) as out_of_range
    from rolls
    group by variant, state_id, dice
),

final as (
    select
        variant, state_id, dice, n_rolls, total_prob,
        case
            when out_of_range then 'a roll probability is null or outside (0, 1]'
            when spread > 0 then 'move rows of one roll disagree on its probability'
            else 'roll probabilities sum to ' || total_prob || ', not 1'
        end as problem
    from by_choice
    where out_of_range or spread > 0 or abs(total_prob - 1) > 1e-12
    order by variant, state_id, dice
)

select * from final
