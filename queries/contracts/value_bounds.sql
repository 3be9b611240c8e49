-- name: contracts/value_bounds
-- description: Values are finite and in range: probabilities in [0, 1], scores in [0, the largest final score]; regrets are not negative.
-- inputs: states, policy, moves
-- grain: one row per out-of-range value
-- output: table_name, variant, state_id, roll, value, problem
-- params: variant (optional; every variant when unset)
-- objectives: shut, target, wins are probabilities; score is a final score, at least 0 and at
-- most the largest final value of a stuck roll or terminal state; others are only checked finite
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
    select variant, max(value) as top
    from (
        select variant, value from policy where best_move is null
        union all
        select variant, value from chosen where terminal
    )
    group by variant
),

bounds as (
    select
        o.variant, o.objective, o.n_objectives,
        case
            when o.objective in ('shut', 'target', 'wins') then 0.0
            when o.objective = 'score' then 0.0
        end as lo,
        case
            when o.objective in ('shut', 'target', 'wins') then 1.0
            when o.objective = 'score' then f.top
        end as hi
    from objectives as o
    left join final_values as f using (variant)
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
