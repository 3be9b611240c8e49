-- name: contracts/bellman
-- description: Every solved state's value equals its Bellman recomputation from its edges and the next states' values.
-- inputs: states, edges
-- grain: one row per state whose value and recomputation differ by more than the tolerance
-- output: variant, state_id, value, recomputed, difference, tolerance, problem
-- param: variant variant optional
-- tolerance: max(1e-12 * max(1, |value|), residual); residual is the solver's own bound (0 for
-- backward induction, the last sweep's change for value iteration on cyclic games)
with chosen as (
    select
        variant, state_id, value, maximise, terminal,
        greatest(1e-12 * greatest(1, abs(value)), coalesce(residual, 0)) as tolerance
    from states
    where getvariable('variant') is null or variant = getvariable('variant')
),

edge_values as (
    -- edge value = reward + sign * value(next); null when the next state is missing
    select
        e.variant, e.state_id, e.dice, e.roll, e.prob,
        e.reward + case when e.next_state_id is null then 0 else e.sign * n.value end
            as edge_value
    from edges as e
    join chosen as s using (variant, state_id)
    left join states as n on n.variant = e.variant and n.state_id = e.next_state_id
),

node_values as (
    select
        v.variant, v.state_id, v.dice, v.roll, min(v.prob) as prob,
        case when any_value(s.maximise) then max(v.edge_value) else min(v.edge_value) end
            as best,
        bool_or(v.edge_value is null) as unknown
    from edge_values as v
    join chosen as s using (variant, state_id)
    group by v.variant, v.state_id, v.dice, v.roll
),

choice_values as (
    select variant, state_id, dice, sum(prob * best) as value, bool_or(unknown) as unknown
    from node_values
    group by variant, state_id, dice
),

recomputed as (
    select
        c.variant, c.state_id,
        case when any_value(s.maximise) then max(c.value) else min(c.value) end as recomputed,
        bool_or(c.unknown) as unknown
    from choice_values as c
    join chosen as s using (variant, state_id)
    group by c.variant, c.state_id
),

variants_with_edges as (
    select distinct variant from edges
),

final as (
    select
        s.variant, s.state_id, s.value, r.recomputed,
        abs(s.value - r.recomputed) as difference, s.tolerance,
        case
            when s.value is null then 'the state has no value (enumerated but not solved)'
            when r.state_id is null then 'a non-terminal state has no edges'
            when r.unknown then 'an edge leads to a state without a value'
            else 'value differs from its Bellman recomputation'
        end as problem
    from chosen as s
    left join recomputed as r using (variant, state_id)
    where s.variant in (select variant from variants_with_edges)
        and (
            s.value is null
            or (r.state_id is null and not s.terminal)
            or (r.state_id is not null
                and (r.unknown or not abs(s.value - r.recomputed) <= s.tolerance))
        )
    order by s.variant, s.state_id
)

select * from final
