-- name: knucklebones_first_player
-- description: Knucklebones boards solved exactly: the first player's win chance and what moving first is worth.
-- inputs: states, rules
-- grain: one row per Knucklebones board built (columns x rows, die faces), either objective or both
-- output: board, columns, rows, faces, wins_variant, first_player_win (P(the first player wins) under optimal play, a draw counting 1/2), second_player_win (= 1 - first_player_win: the game is zero-sum with a draw worth 1/2 to each), value_of_going_first (= first_player_win - second_player_win, in win probability), score_variant, first_player_score_diff (expected final score difference first minus second under play maximising it, in points; going second is worth minus this), value_of_going_first_score (= 2 x first_player_score_diff, points); boards in order of size
-- param: variant variant optional
-- families: knucklebones
-- variant: keep only the board of this variant, either objective; unset, every Knucklebones board built
with params as (
    select getvariable('variant') as variant
),

boards as (
    -- Knucklebones variants and their board, read from the rules recorded with the states table
    select
        r.variant,
        r.rules ->> 'objective' as objective,
        (r.rules ->> 'columns')::integer as columns,
        (r.rules ->> 'rows')::integer as rows,
        (r.rules ->> 'faces')::integer as faces
    from rules as r
    where r.game = 'knucklebones'
),

chosen as (
    -- the board of the variant asked for (both objectives), or every board
    select b.*
    from boards as b
    where (select variant from params) is null
        or (b.columns, b.rows, b.faces) in (
            select (columns, rows, faces) from boards where variant = (select variant from params)
        )
),

start as (
    -- state 0 is both boards empty, seen by the player about to move first
    select c.*, s.value
    from chosen as c
    join states as s using (variant)
    where s.state_id = 0
),

wins as (
    select * from start where objective = 'wins'
),

score as (
    select * from start where objective = 'score'
),

final as (
    select
        concat(b.columns, 'x', b.rows, ' d', b.faces) as board,
        b.columns,
        b.rows,
        b.faces,
        w.variant as wins_variant,
        w.value as first_player_win,
        1 - w.value as second_player_win,
        w.value - (1 - w.value) as value_of_going_first,
        s.variant as score_variant,
        s.value as first_player_score_diff,
        2 * s.value as value_of_going_first_score
    from (select distinct columns, rows, faces from chosen) as b
    left join wins as w using (columns, rows, faces)
    left join score as s using (columns, rows, faces)
    order by b.columns * b.rows, b.faces, b.columns, wins_variant, score_variant
)

select * from final
