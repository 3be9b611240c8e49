-- name: nplayer_seats
-- description: N-player games: who is favoured by seat, the value of playing last (the last seat's payoff less the average), and what each player loses by maximising P(shut) instead of their payoff.
-- inputs: summary
-- grain: one row per variant and seat
-- output: variant, seat, players, expected_payoff, fair_payoff (the payoff if no seat were favoured), edge (expected_payoff - fair_payoff), is_last, payoff_shut_chaser, loss_shut_chaser
-- param: variant variant optional
-- families: nplayer
with figures as (
    select variant, figure, parameter as seat, value
    from summary
    where (getvariable('variant') is null or variant = getvariable('variant'))
        and figure in ('expected_payoff', 'payoff_shut_chaser', 'loss_shut_chaser')
),

by_seat as (
    select
        variant, seat,
        max(value) filter (where figure = 'expected_payoff') as expected_payoff,
        max(value) filter (where figure = 'payoff_shut_chaser') as payoff_shut_chaser,
        max(value) filter (where figure = 'loss_shut_chaser') as loss_shut_chaser
    from figures
    group by variant, seat
),

sized as (
    select
        *,
        count(*) over (partition by variant) as players,
        -- every seat's fair payoff: the average (1/N of the win, or 0 in stakes)
        avg(expected_payoff) over (partition by variant) as fair_payoff
    from by_seat
),

final as (
    select
        variant, seat, players, expected_payoff, fair_payoff,
        expected_payoff - fair_payoff as edge,
        seat = players as is_last,
        payoff_shut_chaser, loss_shut_chaser
    from sized
    order by variant, seat
)

select * from final
