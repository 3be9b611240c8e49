-- name: two_player_p2_curve
-- description: Expected wins at the start of each turn of a two-player variant: P1's from the full box, and P2's from the full box for every possible P1 score.
-- inputs: states
-- grain: one row for P1's start, then one row per possible P1 score
-- output: player (1 or 2), p1_score (null for P1), expected_wins (of that player, a tie counting 1/2), opponent_wins (1 - expected_wins)
-- param: variant variant default two-player
-- families: nplayer
-- players: 2
with params as (
    select coalesce(getvariable('variant'), 'two-player') as variant
),

variant_states as (
    select s.*
    from states as s
    join params using (variant)
),

full_box as (
    -- the full box has every tile open: the largest open sum
    select max(open_sum) as open_sum from variant_states
),

starts as (
    select s.player, s.p1_score, s.value
    from variant_states as s
    join full_box using (open_sum)
),

final as (
    select
        player,
        p1_score,
        value as expected_wins,
        1 - value as opponent_wins
    from starts
    order by player, p1_score
)

select * from final
