-- name: contracts/policy_optimal
-- description: Every policy row picks a best move: its value is the best of the moves (and of the edges), it is the move marked is_best, and n_optimal counts the ties.
-- inputs: policy, moves, edges, states
-- grain: one row per (variant, state_id, roll) whose policy row is wrong
-- output: variant, state_id, roll, best_move, value, best_of_moves, problem
-- params: variant (optional; every variant when unset)
-- ties: moves within 1e-12 * max(1, |best|) of the best value, as in the solver
-- masks: a streamed build (big custom boxes) writes moves as tile bitmasks (best_move_mask,
--   move_mask) and leaves the list columns null; they are read as the lists they stand for
with chosen as (
    select p.* replace (coalesce(p.best_move, case when p.best_move_mask is not null then list_transform(
            list_filter(range(0, 32), lambda b: (p.best_move_mask >> b) & 1 = 1),
            lambda b: (b + 1)::tinyint) end) as best_move),
        s.maximise,
        greatest(1e-12 * greatest(1, abs(p.value)), coalesce(s.residual, 0)) as tolerance
    from policy as p
    join states as s using (variant, state_id)
    where getvariable('variant') is null or p.variant = getvariable('variant')
),

move_stats as (
    select
        m.variant, m.state_id, m.roll,
        case when any_value(c.maximise) then max(m.value) else min(m.value) end as best,
        count(*) as n_moves,
        count(*) filter (where m.is_best) as n_marked,
        any_value(m.move) filter (where m.is_best) as marked_move,
        any_value(m.value) filter (where m.move = c.best_move) as value_of_best_move
    from (
        select * replace (coalesce(move, case when move_mask is not null then list_transform(
            list_filter(range(0, 32), lambda b: (move_mask >> b) & 1 = 1),
            lambda b: (b + 1)::tinyint) end) as move) from moves
    ) as m
    join chosen as c using (variant, state_id, roll)
    group by m.variant, m.state_id, m.roll
),

with_moves as (
    -- variants built with a moves table (big boxes and boards may be built without one)
    select distinct variant from moves
),

ties as (
    select m.variant, m.state_id, m.roll, count(*) as n_ties
    from moves as m
    join move_stats as b using (variant, state_id, roll)
    where abs(m.value - b.best) <= 1e-12 * greatest(1, abs(b.best))
    group by m.variant, m.state_id, m.roll
),

edge_nodes as (
    -- node value recomputed from the edges (any dice that can roll this total)
    select
        e.variant, e.state_id, e.roll,
        case when any_value(s.maximise) then max(e.reward + coalesce(e.sign * n.value, 0))
            else min(e.reward + coalesce(e.sign * n.value, 0)) end as best
    from edges as e
    join states as s using (variant, state_id)
    left join states as n on n.variant = e.variant and n.state_id = e.next_state_id
    where getvariable('variant') is null or e.variant = getvariable('variant')
    group by e.variant, e.state_id, e.roll
),

checked as (
    select
        c.variant, c.state_id, c.roll, c.best_move, c.value, m.best as best_of_moves,
        case
            when c.best_move is null and m.n_moves > 0 then 'no best move, yet legal moves exist'
            when c.best_move is null and c.n_optimal <> 0 then 'n_optimal is not 0 when stuck'
            when c.best_move is null then null
            when m.n_moves is null and c.variant in (select variant from with_moves)
                then 'a best move, yet no rows in moves'
            when m.n_moves is null then null  -- a variant built without its moves table
            when c.n_moves <> m.n_moves then 'n_moves disagrees with the moves table'
            when not abs(c.value - m.best) <= c.tolerance then 'value is not the best move value'
            when not abs(m.value_of_best_move - c.value) <= c.tolerance
                or m.value_of_best_move is null then 'best_move does not have the best value'
            when m.n_marked <> 1 or m.marked_move <> c.best_move
                then 'moves.is_best does not mark exactly the policy move'
            when c.n_optimal <> t.n_ties then 'n_optimal is ' || c.n_optimal || ', not '
                || t.n_ties
        end as problem
    from chosen as c
    left join move_stats as m using (variant, state_id, roll)
    left join ties as t using (variant, state_id, roll)
),

against_edges as (
    select
        c.variant, c.state_id, c.roll, c.best_move, c.value, e.best as best_of_moves,
        case
            when e.state_id is null then 'the policy row has no edges'
            when not abs(c.value - e.best) <= c.tolerance
                then 'value is not the best edge value'
        end as problem
    from chosen as c
    left join edge_nodes as e using (variant, state_id, roll)
    where c.variant in (select variant from edges)
),

unpoliced as (
    select e.variant, e.state_id, e.roll, null::tinyint[] as best_move, null::double as value,
        e.best as best_of_moves, 'a (state, roll) of edges has no policy row' as problem
    from edge_nodes as e
    anti join policy as p using (variant, state_id, roll)
),

final as (
    select * from checked where problem is not null
    union all
    select * from against_edges where problem is not null
    union all
    select * from unpoliced
    order by variant, state_id, roll
)

select * from final
