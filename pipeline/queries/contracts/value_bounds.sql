-- name: contracts/value_bounds
-- description: Values are finite and in range: probabilities in [0, 1], scores within the final scores' range; regrets are not negative.
-- inputs: states, policy, moves, edges
-- grain: one row per out-of-range value
-- output: table_name, variant, state_id, roll, value, problem
-- param: variant variant optional
-- objectives: shut, target, wins are probabilities, in [0, 1]. score is a final score (or score
-- difference): with only edges of sign >= 0 (one player) every value lies between the least and
-- the largest final value (for Shut the Box: [0, largest score left when stuck]); where an edge
-- hands the game to an opponent (sign < 0), or the variant has no edges, within +-max |final|.
-- Final values: the values of stuck rolls (policy.best_move is null) and terminal states.
-- Other objectives are only checked finite.
with chosen as (
    select *
    from states
    where getvariable('variant') is null or variant = getvariable('variant')
),

objectives as (
    select variant, any_value(objective) as objective, count(distinct objective) as n_objectives
    from chosen
    group by variant
),

final_values as (
    -- the game ends on a stuck roll (policy.best_move is null) or in a terminal state
    select variant, min(value) as least, max(value) as top, max(abs(value)) as largest
    from (
        select variant, value from policy where best_move is null
        union all
        select variant, value from chosen where terminal
    )
    group by variant
),

one_player as (
    -- true when no edge hands the game to an opponent
    select variant, bool_and(sign >= 0) as one_player
    from edges
    group by variant
),

bounds as (
    select
        o.variant, o.objective, o.n_objectives,
        case
            when o.objective in ('shut', 'target', 'wins') then 0.0
            when o.objective = 'score' and p.one_player then f.least
            when o.objective = 'score' then -f.largest
        end as lo,
        case
            when o.objective in ('shut', 'target', 'wins') then 1.0
            when o.objective = 'score' and p.one_player then f.top
            when o.objective = 'score' then f.largest
        end as hi
    from objectives as o
    left join final_values as f using (variant)
    left join one_player as p using (variant)
),

all_values as (
    select 'states' as table_name, variant, state_id, null::integer as roll, value from chosen
    union all
    select 'policy', variant, state_id, roll, value from policy
    where variant in (select variant from objectives)
    union all
    select 'moves', variant, state_id, roll, value from moves
    where variant in (select variant from objectives)
),

checked as (
    select
        v.table_name, v.variant, v.state_id, v.roll, v.value,
        case
            when b.n_objectives > 1 then 'the variant has more than one objective'
            when v.value is null and v.table_name <> 'states' then 'value is null'
            when v.value is null then null  -- unsolved states are the bellman contract's concern
            when isnan(v.value) or isinf(v.value) then 'value is not finite'
            when v.value < b.lo - 1e-12 * greatest(1, abs(b.lo))
                then 'value below ' || b.lo || ' for objective ' || b.objective
            when v.value > b.hi + 1e-12 * greatest(1, abs(b.hi))
                then 'value above ' || b.hi || ' for objective ' || b.objective
        end as problem
    from all_values as v
    join bounds as b using (variant)
),

negative_regret as (
    select 'moves' as table_name, variant, state_id, roll::integer as roll, regret as value,
        'regret is negative or null' as problem
    from moves
    where variant in (select variant from objectives) and not coalesce(regret >= 0, false)
),

final as (
    select * from checked where problem is not null
    union all
    select * from negative_regret
    order by table_name, variant, state_id, roll
)

select * from final
