-- name: contracts/stb_move_legal
-- description: One-player Shut the Box only: every edge rolls dice the rules allow, shuts open tiles summing to the roll, leads to the right state, and no legal move is missing.
-- inputs: edges, rules (the `stb.rules` metadata; only variants whose game is shut-the-box)
-- grain: one row per bad edge, per missing legal move, per wrong set of dice choices
-- output: variant, state_id, dice, roll, move, next_state_id, problem
-- param: variant variant optional
with stb as (
    select
        variant,
        (rules ->> 'tiles')::integer as n_tiles,
        (rules ->> 'dice')::integer as n_dice,
        (rules ->> 'sides')::integer as sides,
        rules ->> 'one_die' as one_die,
        (rules ->> 'one_die_sum')::integer as one_die_sum,
        -- tiles that must all be shut before one die may be rolled, as a bitmask
        coalesce(list_sum(list_transform(
            from_json(rules -> 'one_die_shut', '["INTEGER"]'), lambda t: 1::bigint << (t - 1)
        )), 0) as one_die_mask,
        (rules ->> 'max_per_move')::integer as max_per_move
    from rules
    where game = 'shut-the-box'
        and (getvariable('variant') is null or variant = getvariable('variant'))
),

stb_edges as (
    select
        e.variant, e.state_id, e.dice, e.roll, e.move, e.next_state_id, r.*
            exclude (variant),
        list_sum(list_transform(e.move, lambda t: 1::bigint << (t - 1))) as move_mask
    from edges as e
    join stb as r using (variant)
),

bad_edges as (
    select
        variant, state_id, dice, roll, move, next_state_id,
        case
            when state_id < 0 or state_id >= 1::bigint << n_tiles
                then 'state id is not a set of tiles 1..' || n_tiles
            when dice is distinct from n_dice and dice is distinct from 1
                then 'the rules never roll ' || coalesce(dice::varchar, 'null') || ' dice'
            when roll is null or roll < dice or roll > dice * sides
                then 'roll ' || coalesce(roll::varchar, 'null') || ' is impossible with '
                    || dice || ' dice of ' || sides || ' sides'
            when move is null and next_state_id is not null
                then 'no move, yet a next state'
            when move is null then null
            when list_min(move) < 1 or list_max(move) > n_tiles
                then 'the move names a tile outside 1..' || n_tiles
            when len(list_distinct(move)) <> len(move) then 'the move names a tile twice'
            when state_id & move_mask <> move_mask then 'the move shuts a tile that is not open'
            when list_sum(move) <> roll then 'the tiles shut do not sum to the roll'
            when len(move) > max_per_move then 'the move shuts more tiles than the rules allow'
            when next_state_id is distinct from xor(state_id, move_mask)
                then 'the next state is not the state with the move''s tiles shut'
        end as problem
    from stb_edges
),

nodes as (
    -- each (state, roll) once, with the open-tile sum; the dice rolled do not change the moves
    select distinct
        variant, state_id, roll, n_tiles, max_per_move,
        list_sum(list_transform(range(1, n_tiles + 1), lambda t: t * ((state_id >> (t - 1)) & 1)))
            as open_sum
    from stb_edges
    where state_id >= 0 and state_id < 1::bigint << n_tiles
),

subsets as (
    -- every state of the game, by open-tile sum (candidate states after a move)
    select
        variant, s.state_id as next_id,
        list_sum(list_transform(range(1, n_tiles + 1), lambda t: t * ((s.state_id >> (t - 1)) & 1)))
            as open_sum
    from states as s
    join stb using (variant)
),

legal as (
    -- shutting the tiles of state_id that next_id lacks is legal iff they sum to the roll
    select n.variant, n.state_id, n.roll, n.state_id - c.next_id as move_mask
    from nodes as n
    join subsets as c on c.variant = n.variant and c.open_sum = n.open_sum - n.roll
    where n.state_id & c.next_id = c.next_id
        and n.state_id <> c.next_id
        and (n.max_per_move is null
            or bit_count(n.state_id) - bit_count(c.next_id) <= n.max_per_move)
),

missing_moves as (
    select
        variant, state_id, null::smallint as dice, roll,
        list_filter(range(1, 25), lambda t: (move_mask >> (t - 1)) & 1 = 1) as move,
        state_id - move_mask as next_state_id,
        'a legal move is missing from edges' as problem
    from legal
    where (variant, state_id, roll, move_mask) not in (
        select (variant, state_id, roll, move_mask) from stb_edges where move is not null
    )
),

dice_allowed as (
    -- the numbers of dice the rules let each non-terminal state roll
    select
        s.variant, s.state_id,
        case
            when r.one_die = 'never' then [r.n_dice]
            when not ((r.one_die_sum is null or n.open_sum <= r.one_die_sum)
                and s.state_id & r.one_die_mask = 0) then [r.n_dice]
            when r.one_die = 'forced' then [1]
            else [1, r.n_dice]
        end as allowed
    from states as s
    join stb as r using (variant)
    join (select distinct variant, next_id as state_id, open_sum from subsets) as n
        using (variant, state_id)
    where s.state_id <> 0
),

dice_rolled as (
    select variant, state_id, list_sort(list(distinct dice)) as rolled
    from stb_edges
    group by variant, state_id
),

wrong_dice as (
    select
        a.variant, a.state_id, null::smallint as dice, null::smallint as roll,
        null::tinyint[] as move, null::bigint as next_state_id,
        'edges roll ' || coalesce(r.rolled::varchar, 'no dice') || ' but the rules allow '
            || a.allowed::varchar as problem
    from dice_allowed as a
    left join dice_rolled as r using (variant, state_id)
    where r.rolled is distinct from a.allowed
        -- variants whose edges were skipped (too large) have no edges at all
        and a.variant in (select variant from stb_edges)
),

final as (
    select variant, state_id, dice, roll, move::integer[] as move, next_state_id, problem
    from bad_edges
    where problem is not null
    union all
    select variant, state_id, dice, roll, move::integer[], next_state_id, problem
    from missing_moves
    union all
    select variant, state_id, dice, roll, move::integer[], next_state_id, problem
    from wrong_dice
    order by variant, state_id, roll
)

select * from final
