-- name: two_player_bellman
-- description: Contract (must return zero rows): states of a two-player variant whose value is not what its edges and successors' values give.
-- inputs: states, edges
-- grain: one row per violating state
-- output: state_id, tiles, player, p1_score, value, backup (recomputed value; null when a nonterminal state has no edges), error (absolute difference)
-- params: variant (default 'two-player'), tolerance (absolute, default 1e-12)
with params as (
    select
        coalesce(getvariable('variant'), 'two-player') as variant,
        coalesce(getvariable('tolerance'), 1e-12) as tolerance
),

variant_states as (
    select s.*
    from states as s
    join params using (variant)
),

edge_values as (
    -- each move's value from the mover's point of view: reward + sign * value(next state);
    -- a P1 pass has reward 1 and sign -1 (P2's wins are P1's losses), a P2 stop has sign 0
    select
        e.state_id,
        e.dice,
        e.roll,
        e.prob,
        e.reward + e.sign * coalesce(n.value, 0) as move_value
    from edges as e
    join params using (variant)
    left join variant_states as n on n.state_id = e.next_state_id
),

roll_values as (
    -- the mover picks the best move for each roll
    select state_id, dice, roll, any_value(prob) as prob, max(move_value) as best
    from edge_values
    group by state_id, dice, roll
),

dice_values as (
    select state_id, dice, sum(prob * best) as value
    from roll_values
    group by state_id, dice
),

backups as (
    select state_id, max(value) as backup
    from dice_values
    group by state_id
),

final as (
    select
        s.state_id,
        s.tiles,
        s.player,
        s.p1_score,
        s.value,
        b.backup,
        abs(s.value - b.backup) as error
    from variant_states as s
    left join backups as b using (state_id)
    where not s.terminal
        and (b.backup is null or abs(s.value - b.backup) > (select tolerance from params))
)

select * from final
