-- name: contracts/edge_next_state
-- description: Every edge starts at a state of its variant and leads to one (or ends the game with sign 0), and no edge leaves a terminal state.
-- inputs: edges, states
-- grain: one row per bad edge
-- output: variant, state_id, dice, roll, move, next_state_id, problem
-- param: variant variant optional
with chosen as (
    select *
    from edges
    where getvariable('variant') is null or variant = getvariable('variant')
),

checked as (
    select
        e.variant, e.state_id, e.dice, e.roll, e.move, e.next_state_id,
        case
            when s.state_id is null then 'the edge starts at a state missing from states'
            when s.terminal then 'the edge leaves a terminal state'
            when e.next_state_id is null and e.sign <> 0
                then 'the edge ends the game but its sign is not 0'
            when e.next_state_id is not null and n.state_id is null
                then 'the next state is missing from states'
            when e.reward is null or e.sign is null then 'reward or sign is null'
        end as problem
    from chosen as e
    left join states as s on s.variant = e.variant and s.state_id = e.state_id
    left join states as n on n.variant = e.variant and n.state_id = e.next_state_id
),

final as (
    select *
    from checked
    where problem is not null
    order by variant, state_id, dice, roll
)

select * from final
