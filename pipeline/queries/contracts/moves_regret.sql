-- name: contracts/moves_regret
-- description: Every move's value is its edge's value, and its regret is what it loses against the policy's best move.
-- inputs: moves, policy, states, edges
-- grain: one row per move whose value or regret is wrong
-- output: variant, state_id, roll, move, value, regret, expected, problem
-- params: variant (optional; every variant when unset)
-- regret: max(0, (best - value) * (1 if maximise else -1)), within max(1e-12 * max(1, |best|), residual)
-- masks: a streamed build writes moves as bitmasks (move_mask) and leaves `move` null; moves
--   are matched to edges on whichever of the two the variant's tables carry
with chosen as (
    select m.*, coalesce(m.move::varchar, 'mask ' || m.move_mask) as move_key,
        p.value as best, s.maximise,
        greatest(1e-12 * greatest(1, abs(p.value)), coalesce(s.residual, 0)) as tolerance
    from moves as m
    join states as s using (variant, state_id)
    left join policy as p using (variant, state_id, roll)
    where getvariable('variant') is null or m.variant = getvariable('variant')
),

edge_moves as (
    select distinct
        e.variant, e.state_id, e.roll,
        coalesce(e.move::varchar, 'mask ' || e.move_mask) as move_key,
        e.reward + case when e.next_state_id is null then 0 else e.sign * n.value end
            as edge_value
    from edges as e
    left join states as n on n.variant = e.variant and n.state_id = e.next_state_id
    where coalesce(e.move::varchar, 'mask ' || e.move_mask) is not null
        and (getvariable('variant') is null or e.variant = getvariable('variant'))
),

checked as (
    select
        c.variant, c.state_id, c.roll, c.move, c.value, c.regret,
        greatest(0, (c.best - c.value) * case when c.maximise then 1 else -1 end) as expected,
        case
            when c.best is null then 'the move has no policy row'
            when not abs(c.regret - greatest(0, (c.best - c.value)
                * case when c.maximise then 1 else -1 end)) <= c.tolerance
                then 'regret is not best value minus move value'
            when c.variant in (select variant from edges) and e.edge_value is null
                then 'the move is not an edge'
            when not abs(c.value - e.edge_value) <= c.tolerance
                then 'value differs from the edge value ' || e.edge_value
        end as problem
    from chosen as c
    left join edge_moves as e using (variant, state_id, roll, move_key)
),

final as (
    select * from checked where problem is not null
    order by variant, state_id, roll
)

select * from final
