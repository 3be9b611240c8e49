-- name: knucklebones_perfect_loss
-- description: What greedy play, the Rust Knucklebones solver's depth-4 heuristic and our depth-2 search give away against perfect play on a board solved exactly (the full game's lean tables), over a fixed sample of positions.
-- inputs: decisions, states, rules
-- grain: one row per player (greedy, seed-d4, ours-d2)
-- output: player, decisions (sampled decisions whose columns differ by more than 1e-6 in win chance), share_suboptimal (share where the player's column loses more than 1e-6), mean_win_lost (win probability lost per decision, decisions weighted alike), max_win_lost, mean_points_lost (expected score difference lost against the best column by score, points), games, seed (the sample: every decision of that many random-vs-random games)
-- param: variant variant default knucklebones
-- families: knucklebones
-- built by: stb-pipeline build --variant knucklebones --variant knucklebones-score --device cuda
-- uses: _knucklebones_decision_values
--
-- Why only the exact tables answer this: a column's value is its successor's, seen from the
-- other side, looked up by id in both objectives' states tables; the decisions table (written
-- beside the lean states by `build --variant knucklebones --device cuda`) holds each sampled
-- decision's legal columns, their successor ids and the column each player picks (ties broken
-- by the player's own generator). `stb-pipeline knucklebones loss` prices the same sample with
-- the same picks through its table lookups and prints the same numbers. Unlike
-- knucklebones_search_loss (per decision over every state of the small boards' moves tables),
-- decisions here are the positions random play meets, so the rates are per decision of that sample.
with valued as (
    -- each sampled decision's columns with their exact worth (_knucklebones_decision_values)
    select *
    from knucklebones_decision_values
    where kind = 'sample'
),

best as (
    -- the decisions that matter: some column is worse than another by more than 1e-6
    select decision, max(win) as best_win, max(diff) as best_diff
    from valued
    group by decision
    having max(win) - min(win) > 1e-6
),

lost as (
    select
        u.player,
        u.ord,
        b.best_win - v.win as win_lost,
        b.best_diff - v.diff as points_lost,
        v.games,
        v.seed
    from valued as v
    join best as b using (decision)
    cross join (values ('greedy', 1), ('seed-d4', 2), ('ours-d2', 3)) as u (player, ord)
    where case u.player
        when 'greedy' then v.pick_greedy
        when 'seed-d4' then v.pick_seed_d4
        else v.pick_ours_d2
    end
),

final as (
    select
        player,
        count(*) as decisions,
        avg(case when win_lost > 1e-6 then 1.0 else 0.0 end) as share_suboptimal,
        avg(win_lost) as mean_win_lost,
        max(win_lost) as max_win_lost,
        avg(points_lost) as mean_points_lost,
        any_value(games) as games,
        any_value(seed) as seed
    from lost
    group by player, ord
    order by ord
)

select * from final
