-- name: one_die_preferred
-- description: States where the optimal player rolls one die although two are allowed, and what each choice is worth.
-- inputs: states, edges, policy
-- grain: one row per state of the variant where one die is strictly better than two
-- output: state_id, tiles, value (optimal), value_one_die, value_two_dice, gain (objective units, > 0); largest gain first
-- param: variant variant default double-shutter
with params as (
    select coalesce(getvariable('variant'), 'double-shutter') as variant
),

choosers as (
    -- ties between one die and two go to two dice, so dice = 1 means strictly better
    select s.variant, s.state_id, s.tiles, s.value, s.maximise
    from states as s
    join params using (variant)
    where s.choice_options = 2 and s.dice = 1
),

rolls as (
    -- edges repeat each (state, dice, roll) once per legal move: keep one
    select distinct e.variant, e.state_id, e.dice, e.roll, e.prob
    from edges as e
    join choosers using (variant, state_id)
),

by_dice as (
    -- value of rolling that many dice: each roll's probability times its best move's value
    select r.variant, r.state_id, r.dice, sum(r.prob * p.value) as value
    from rolls as r
    join policy as p using (variant, state_id, roll)
    group by r.variant, r.state_id, r.dice
),

final as (
    select
        c.state_id,
        c.tiles,
        c.value,
        one.value as value_one_die,
        two.value as value_two_dice,
        case when c.maximise then one.value - two.value else two.value - one.value end as gain
    from choosers as c
    join by_dice as one on one.variant = c.variant and one.state_id = c.state_id and one.dice = 1
    join by_dice as two on two.variant = c.variant and two.state_id = c.state_id and two.dice > 1
    order by gain desc, c.state_id
)

select * from final
