-- name: knucklebones_search_loss
-- description: What a greedy player and the Rust Knucklebones solver's depth-2 search give away against exact play on a solved Knucklebones board, decision by decision.
-- inputs: moves, states, rules
-- grain: one row per strategy (greedy, seed-d2) of one Knucklebones variant with a moves table
-- output: strategy, decisions (the (state, roll) pairs with two or more distinct moves), share_suboptimal (share of them where the strategy's move loses more than 1e-9), mean_regret (value lost per decision, averaged over every decision alike; win probability for a wins variant, points for -score), max_regret, opening_regret (expected value lost by the first move of the game, over the six rolls)
-- param: variant variant default knucklebones-2x2
-- families: knucklebones
--
-- Why per decision, from `moves`: the benchmarks table's Knucklebones rows are simulations of the
-- full 3x3 game between heuristic players, never against exact play on a solved board, so they
-- cannot price a mistake. Here every legal move of every (state, roll) already has its exact
-- value and regret (value lost against the best move, exact play after it), so the regret of the
-- move a strategy picks is exact. A strategy facing tied moves picks among them at random, so its
-- regret there is the tied moves' mean. Decisions are weighted alike (no reach probabilities exist
-- for these cyclic games), so mean_regret is not the strategy's loss over a whole game: it ranks
-- strategies, and opening_regret is the one exact per-game number. The boards built without
-- `moves` (2x3, 3x2, 3x3-d4 keep `states` and `policy` only) cannot be priced: no rows for them
-- (or "not built" when the data directory has no moves table at all).
--
-- The strategies: greedy takes the best immediate change of the score difference (placed value,
-- stacking and removals). seed-d2 is the Rust Knucklebones solver's search to depth 2 (our placement, then each reply
-- roll and the reply best for the opponent), estimating a position by the score difference plus
-- 3.5 per placement the mover has left over the opponent before a board fills, as in the
-- `seed-d2` benchmark player (pipeline/games/knucklebones/players/search.py, evaluator SEED). Our own
-- evaluator's leaf (a logistic win estimate) is not repeated in SQL.
with params as (
    select coalesce(getvariable('variant'), 'knucklebones-2x2') as variant
),

board as (
    -- slots on one board, from the variant's recorded rules
    select r.variant, (r.rules ->> 'columns')::integer * (r.rules ->> 'rows')::integer as slots
    from rules as r
    join params using (variant)
    where r.game = 'knucklebones'
),

filled as (
    -- dice on each board: `tiles` is MOVER;OPPONENT with one digit per die
    select
        s.state_id,
        s.terminal,
        s.score,
        b.slots - length(regexp_replace(split_part(s.tiles, ';', 1), '[^0-9]', '', 'g'))
            as empty_mover,
        b.slots - length(regexp_replace(split_part(s.tiles, ';', 2), '[^0-9]', '', 'g'))
            as empty_opponent
    from states as s
    join board as b using (variant)
),

leaf as (
    -- the Rust Knucklebones solver's estimate for the player to move, in points: exact once the game is over; else
    -- the difference plus 3.5 when the mover has one placement more left (they move first)
    select
        state_id,
        terminal,
        score,
        case
            when terminal then score
            when empty_mover <= empty_opponent then score + 3.5
            else score
        end as estimate
    from filled
),

legal as (
    select m.state_id, m.roll, m.next_state_id, m.regret
    from moves as m
    join params using (variant)
),

reply_roll as (
    -- depth 1 below our move: after each roll the opponent makes the reply best by the estimate
    -- (the next state is seen by its mover, so its estimate counts negatively for them)
    select l.state_id, l.roll, max(-n.estimate) as best
    from legal as l
    join leaf as n on n.state_id = l.next_state_id
    group by l.state_id, l.roll
),

reply as (
    select state_id, avg(best) as value
    from reply_roll
    group by state_id
),

priced as (
    -- each move by both strategies' measures, from the view of the player choosing it
    select
        l.state_id,
        l.roll,
        l.regret,
        count(*) over (partition by l.state_id, l.roll) as n_moves,
        -n.score - s.score as greedy_gain,
        case when n.terminal then -n.score else -r.value end as seed_d2_value
    from legal as l
    join leaf as s on s.state_id = l.state_id
    join leaf as n on n.state_id = l.next_state_id
    left join reply as r on r.state_id = l.next_state_id
),

picked as (
    -- the moves each strategy would play: every move within 1e-9 of its best measure
    select 'greedy' as strategy, state_id, roll, regret
    from priced
    where n_moves > 1
    qualify greedy_gain >= max(greedy_gain) over (partition by state_id, roll) - 1e-9
    union all
    select 'seed-d2' as strategy, state_id, roll, regret
    from priced
    where n_moves > 1
    qualify seed_d2_value >= max(seed_d2_value) over (partition by state_id, roll) - 1e-9
),

decision as (
    -- ties are picked at random: the regret of a decision is its tied moves' mean
    select strategy, state_id, roll, avg(regret) as regret
    from picked
    group by strategy, state_id, roll
),

opening as (
    -- the first move: every roll from the empty boards (state 0), one-move rolls included
    select p.strategy, avg(coalesce(d.regret, 0)) as opening_regret
    from (select distinct strategy from decision) as p
    cross join (select distinct roll from legal where state_id = 0) as r
    left join decision as d on d.strategy = p.strategy and d.state_id = 0 and d.roll = r.roll
    group by p.strategy
),

final as (
    select
        d.strategy,
        count(*) as decisions,
        avg(case when d.regret > 1e-9 then 1.0 else 0.0 end) as share_suboptimal,
        avg(d.regret) as mean_regret,
        max(d.regret) as max_regret,
        any_value(o.opening_regret) as opening_regret
    from decision as d
    join opening as o using (strategy)
    group by d.strategy
    order by d.strategy
)

select * from final
