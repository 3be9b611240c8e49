-- name: knucklebones_openings
-- description: The best column for every die of the first two placements of a Knucklebones board solved exactly, and what the other columns give away (the full game's lean tables, or any board built the same way).
-- inputs: decisions, states, rules
-- grain: one row per opening decision: ply 0 is the empty board and a die (every column is the same position there), ply 1 the reply to each first die (the first player's die in the first column)
-- output: ply, board (mover;opponent, columns joined by /), roll, columns (columns with room), best_column (perfect play: best win chance, then best score difference, then the lowest column), win (P(win) after it, a draw counting 1/2), score_diff (expected final score difference after the best column by score, points), best_score_column (the column best by score difference; it can differ), win_lost_worst (win probability the worst column gives away), all_same (every column leads to the same position), facing_column (ply 1: the best column faces the opponent's die, removing the matching dice)
-- param: variant variant default knucklebones
-- families: knucklebones
-- built by: stb-pipeline build --variant knucklebones --variant knucklebones-score --device cuda
-- uses: _knucklebones_decision_values
--
-- Why only the exact tables answer this: a column's value is its successor's, looked up by id in
-- the states table of each objective (the view knucklebones_decision_values). The decisions
-- table (written beside the lean states by `build --variant knucklebones --device cuda`) lists
-- every opening's legal columns and their successor ids, so no board logic is needed in SQL.
with openings as (
    -- each opening's columns with their exact worth (the view of _knucklebones_decision_values)
    select *
    from knucklebones_decision_values
    where kind = 'opening'
),

ranked as (
    select
        *,
        row_number() over (
            partition by decision order by win desc, diff desc, column_number
        ) as by_win,
        row_number() over (
            partition by decision order by diff desc, win desc, column_number
        ) as by_score
    from openings
),

final as (
    select
        b.ply,
        b.board,
        b.roll,
        count(*) as columns,
        arg_min(b.column_number, b.by_win) as best_column,
        max(b.win) as win,
        max(b.diff) as score_diff,
        arg_min(b.column_number, b.by_score) as best_score_column,
        max(b.win) - min(b.win) as win_lost_worst,
        count(distinct b.next_state_id) = 1 as all_same,
        case
            when b.ply = 0 then null
            -- the opponent's first die sits in the first column
            else arg_min(b.column_number, b.by_win) = 1
        end as facing_column
    from ranked as b
    group by b.decision, b.ply, b.board, b.roll
    order by b.ply, b.board, b.roll
)

select * from final
