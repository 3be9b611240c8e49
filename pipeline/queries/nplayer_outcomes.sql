-- name: nplayer_outcomes
-- description: N-player games: how a game ends under optimal play (each player shuts the box, wins alone on points, or the lowest score is tied) and each player's expected payoff, from the summary table.
-- inputs: summary
-- grain: one row per seat, then one row for a tie
-- output: seat (null for the tie row), outcome, probability, expected_payoff (share of the win, or winnings in stakes)
-- param: variant variant default two-player-stake
-- families: nplayer
-- For the stake game (two-player-stake) this is cananian's outcome split: P1 shuts, P2 shuts,
-- P1 wins on points, P2 wins on points, a tie (the stake returned).
-- A last player whose score is already below the best has won and stops rolling (share payoff):
-- that game counts as a win on points, never as a shut, even where rolling on could shut the box.
with params as (
    select coalesce(getvariable('variant'), 'two-player-stake') as variant
),

figures as (
    select s.figure, s.parameter as seat, s.value
    from summary as s
    join params using (variant)
),

seats as (
    select
        seat,
        max(value) filter (where figure = 'p_shut') as p_shut,
        max(value) filter (where figure = 'p_points') as p_points,
        max(value) filter (where figure = 'expected_payoff') as expected_payoff
    from figures
    where seat is not null and figure in ('p_shut', 'p_points', 'expected_payoff')
    group by seat
),

final as (
    select seat, 'shuts the box' as outcome, p_shut as probability, expected_payoff from seats
    union all
    select seat, 'wins on points', p_points, expected_payoff from seats
    union all
    select null, 'tie for the lowest score', value, null from figures where figure = 'p_tie'
    order by seat nulls last, outcome desc
)

select * from final
