-- name: strategy_mistakes
-- description: Where a deterministic strategy (greedy by default) goes wrong: the (state, roll) pairs where its move loses value against the optimal move, ranked by how much that costs an optimal player.
-- inputs: node_reach, reach, policy, moves
-- grain: one row per (state, roll) where the strategy's move is worse than the best move
-- output: tiles, roll, move (the strategy's), best_move, loss (value lost by that one move, optimal play after: probability for objective shut), reach_optimal (P(optimal play reaches the state)), weight = reach_optimal * loss (the ranking), node_reach (P(the strategy reaches this state and roll)), gap_share = node_reach * loss (these sum to the strategy's whole loss at the start)
-- param: variant variant default classic
-- param: strategy text one of optimal,random,greedy,max-tiles,fewest-tiles,low-first,most-options,most-outcomes default greedy
with params as (
    select
        coalesce(getvariable('variant'), 'classic') as variant,
        coalesce(getvariable('strategy'), 'greedy') as strategy
),

played as (
    -- the strategy's move at every (state, roll) where it has one
    select n.variant, n.state_id, n.tiles, n.roll, n.move, n.next_state_id, n.reach_prob
    from node_reach as n
    join params using (variant, strategy)
    where n.next_state_id is not null
),

priced as (
    -- regret: value lost against the best move, both followed by optimal play
    select p.*, m.regret as loss
    from played as p
    join moves as m using (variant, state_id, roll, next_state_id)
),

optimal_reach as (
    select r.state_id, r.reach_prob as reach_optimal
    from reach as r
    join params using (variant)
    where r.strategy = 'optimal'
),

final as (
    select
        p.tiles,
        p.roll,
        p.move,
        b.best_move,
        p.loss,
        o.reach_optimal,
        o.reach_optimal * p.loss as weight,
        p.reach_prob as node_reach,
        p.reach_prob * p.loss as gap_share
    from priced as p
    join policy as b using (variant, state_id, roll)
    join optimal_reach as o using (state_id)
    where p.loss > 1e-12 * greatest(1, abs(b.value))
    order by weight desc, gap_share desc, p.tiles, p.roll
)

select * from final
