-- name: nplayer_position
-- description: N-player games: a position as a player meets it (seat, best score so far and how many hold it, open tiles, roll): the best move, every legal move's value to the mover, and every player's chance after the best move.
-- inputs: states, moves
-- grain: one row per player (seat) and legal move, best move first
-- output: move, is_best, mover_value (the move's value to the mover), regret, seat, who (holder of the best / beaten / mover / later), players_like_this (how many players that row speaks for), share (each such player's expected share of the win, or winnings)
-- param: variant variant default two-player
-- families: nplayer
-- param: player int 1..6 default 2
-- param: best_score int default 8
-- param: best_count int 1..5 default 1
-- param: tiles text default 123456
-- param: roll int default 7
-- A later seat's row is that seat's own share. Earlier players: those holding the best score each
-- get the holder share, those already beaten the beaten share (the tables cannot tell which
-- seats they are, nor need to: their payoffs are the same).
with params as (
    select
        coalesce(getvariable('variant'), 'two-player') as variant,
        coalesce(getvariable('player'), 2)::integer as player,
        coalesce(getvariable('best_score'), 8)::bigint as best_score,
        coalesce(getvariable('best_count'), 1)::integer as best_count,
        coalesce(getvariable('tiles'), '123456') as tiles,
        coalesce(getvariable('roll'), 7)::integer as roll
),

here as (
    -- the state: player 1 has no best score yet
    select s.*
    from states as s
    join params as p
        on s.variant = p.variant and s.player = p.player and s.tiles = p.tiles
        and (
            (p.player = 1 and s.best_score is null)
            or (s.best_score = p.best_score and s.best_count = p.best_count)
        )
),

options as (
    select m.move, m.is_best, m.value as mover_value, m.regret, m.next_state_id
    from moves as m
    join here as h on m.variant = h.variant and m.state_id = h.state_id
    join params as p on m.roll = p.roll
),

after as (
    -- the state each move leads to (same seat, fewer tiles): its shares
    select o.*, s.*
    from options as o
    join here as h on true
    join states as s on s.variant = h.variant and s.state_id = o.next_state_id
),

seats as (
    select
        a.move, a.is_best, a.mover_value, a.regret,
        k.seat,
        case
            when k.seat = a.player then 'mover'
            when k.seat > a.player then 'later'
        end as who,
        1 as players_like_this,
        [a.share_1, a.share_2, a.share_3, a.share_4, a.share_5, a.share_6][k.seat] as share
    from after as a
    join (select unnest(range(1, 7)) as seat) as k on k.seat >= a.player and k.seat <= a.players
    union all
    select move, is_best, mover_value, regret, null, 'holder of the best', best_count, share_holder
    from after where player > 1
    union all
    select move, is_best, mover_value, regret, null, 'beaten', player - 1 - best_count, share_beaten
    from after where player - 1 - best_count > 0
),

final as (
    select *
    from seats
    order by regret, is_best desc, list_reverse_sort(move) desc, seat nulls first, who
)

select * from final
