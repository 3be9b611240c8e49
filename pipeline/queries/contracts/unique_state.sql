-- name: contracts/unique_state
-- description: Each (variant, state_id) is one row of states, and each (variant, state_id, roll) one row of policy.
-- inputs: states, policy
-- grain: one row per duplicated key
-- output: table_name, variant, state_id, roll (null for states), copies, problem
-- param: variant variant optional
with state_keys as (
    select 'states' as table_name, variant, state_id, null::integer as roll, count(*) as copies
    from states
    where getvariable('variant') is null or variant = getvariable('variant')
    group by variant, state_id
    having count(*) > 1
),

policy_keys as (
    select 'policy' as table_name, variant, state_id, roll::integer as roll, count(*) as copies
    from policy
    where getvariable('variant') is null or variant = getvariable('variant')
    group by variant, state_id, roll
    having count(*) > 1
),

final as (
    select *, 'key appears ' || copies || ' times' as problem
    from (select * from state_keys union all select * from policy_keys)
    order by table_name, variant, state_id, roll
)

select * from final
