-- name: knucklebones_players
-- description: How close each Knucklebones player comes to perfect play on a board solved exactly: its share of exactly optimal choices (overall and in the middle game), the win chance it gives away per decision and at worst, and its time a move, over held-out positions met in play.
-- inputs: benchmarks
-- grain: one row per rated player of one Knucklebones variant
-- output: player, decisions (held-out (position, die) decisions with two or more distinct moves), optimal (share of them where the player's column is exactly optimal in win chance, within 1e-12 relative), optimal_middle (the same over the middle game: at most two thirds of both boards' slots filled), middle_decisions, mean_regret (win chance lost per decision, decisions weighted alike), max_regret, mean_points_lost (expected score difference lost against the score objective's best column, points), ms_per_move (mean time of a pick, one core, this machine), games and seed (the games between the project's players whose held-out positions were drawn)
-- param: variant variant default knucklebones-3x3-d4
-- families: knucklebones
-- built by: stb-pipeline knucklebones rate --variant knucklebones-3x3-d4
--
-- Why from benchmarks: `knucklebones rate` prices every pick against the exact value of every
-- choice (the board's tables, or a solve) and stores one row per player (method 'exact
-- choices'), so the figures are kept beside the match results of `knucklebones benchmark`.
-- The positions are held out: a fixed tenth of the state ids (a hash of the id) that no
-- distilled evaluator is trained on. Players ranked best first: by share optimal, then by
-- mean regret.
with params as (
    select coalesce(getvariable('variant'), 'knucklebones-3x3-d4') as variant
),

rated as (
    select b.*
    from benchmarks as b
    join params using (variant)
    where b.method = 'exact choices'
),

final as (
    select
        strategy as player,
        decisions,
        optimal,
        optimal_middle,
        middle_decisions,
        mean_regret,
        max_regret,
        mean_points_lost,
        ms_per_move,
        games,
        seed
    from rated
    order by optimal desc, mean_regret asc, player
)

select * from final
