-- name: strategy_comparison
-- description: Every strategy side by side: exact P(shut) and expected score, the latest simulation, and what each gives up against optimal play.
-- inputs: benchmarks
-- grain: one row per strategy of the variant
-- output: strategy, win_pct (exact, percent), loss_pct (percentage points below optimal), expected_score (exact), score_gap (above optimal), sim_games, sim_win_pct, sim_ci_low_pct, sim_ci_high_pct, exact_inside_ci; best first
-- param: variant variant default classic
with params as (
    select coalesce(getvariable('variant'), 'classic') as variant
),

exact as (
    select b.strategy, b.win_rate, b.expected_score
    from benchmarks as b
    join params using (variant)
    where b.method = 'exact'
),

simulation as (
    select b.strategy, b.games, b.win_rate, b.ci_low, b.ci_high
    from benchmarks as b
    join params using (variant)
    where b.method = 'simulation'
),

best as (
    select win_rate as best_win_rate, expected_score as best_score
    from exact
    where strategy = 'optimal'
),

final as (
    select
        e.strategy,
        100 * e.win_rate as win_pct,
        100 * (b.best_win_rate - e.win_rate) as loss_pct,
        e.expected_score,
        e.expected_score - b.best_score as score_gap,
        s.games as sim_games,
        100 * s.win_rate as sim_win_pct,
        100 * s.ci_low as sim_ci_low_pct,
        100 * s.ci_high as sim_ci_high_pct,
        e.win_rate between s.ci_low and s.ci_high as exact_inside_ci
    from exact as e
    cross join best as b
    left join simulation as s using (strategy)
    order by e.win_rate desc, e.expected_score, e.strategy
)

select * from final
