-- name: contracts/nplayer_shares
-- description: N-player games: every player's payoff in a state adds up to the game's total (1: the win is shared out; 0: stakes only change hands), and the mover's own share is the state's value.
-- inputs: states
-- grain: one row per state whose shares do not add up
-- output: variant, state_id, player, total, expected, problem
-- param: variant variant optional
-- Each earlier player holding the best score gets share_holder, each earlier player already
-- beaten share_beaten; the mover and later seats their own share_k. Tolerance 1e-12 per term.
with chosen as (
    select *
    from states
    where (getvariable('variant') is null or variant = getvariable('variant'))
        and players is not null
),

own as (
    -- the shares of the mover and every later seat
    select
        variant, state_id,
        coalesce(share_1, 0) + coalesce(share_2, 0) + coalesce(share_3, 0)
        + coalesce(share_4, 0) + coalesce(share_5, 0) + coalesce(share_6, 0) as later,
        [share_1, share_2, share_3, share_4, share_5, share_6][player] as mover
    from chosen
),

totals as (
    select
        c.variant, c.state_id, c.player, c.value, o.mover,
        o.later
        + coalesce(c.share_holder, 0) * coalesce(c.best_count, 0)
        + coalesce(c.share_beaten, 0) * (c.player - 1 - coalesce(c.best_count, 0)) as total,
        case when c.objective = 'wins' then 1.0 else 0.0 end as expected
    from chosen as c
    join own as o using (variant, state_id)
),

checked as (
    select
        variant, state_id, player, total, expected,
        case
            when total is null or mover is null then 'a share is missing'
            when abs(total - expected) > 1e-11
                then 'the shares add up to ' || total || ', not ' || expected
            when abs(mover - value) > 1e-12 * greatest(1, abs(value))
                then 'the mover''s share ' || mover || ' is not the value ' || value
        end as problem
    from totals
),

final as (
    select * from checked where problem is not null order by variant, state_id
)

select * from final
