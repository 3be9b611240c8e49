-- name: double_shutter_p_of_n
-- description: The Double Shutter article's p(n): P(final score > n) when playing to maximise P(final score <= n), n = 0..20.
-- inputs: summary
-- grain: one row per target n
-- output: n; p_n = P(score > n) (probability, 0..1); p_within = 1 - p_n; increasing n
-- param: variant variant default double-shutter
-- families: double_shutter
with params as (
    select coalesce(getvariable('variant'), 'double-shutter') as variant
),

family as (
    select s.parameter as n, s.value as p_n
    from summary as s
    join params using (variant)
    where s.figure = 'p_above' and s.objective = 'target'
),

final as (
    select n, p_n, 1 - p_n as p_within
    from family
    order by n
)

select * from final
