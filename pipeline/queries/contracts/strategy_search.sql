-- name: contracts/strategy_search
-- description: The rule search holds together: each line's gap is what it loses against its objective's optimal line (whose value, for the variant's own objective, is the start state's), the rules of a size are ranked best first, the exceptions curve starts at its rule's value and never gets worse, and every variant with strategy rows is built (has states rows: no query reads the others).
-- inputs: strategy_search, strategy_exceptions, states
-- grain: one row per line of strategy_search or step of strategy_exceptions that breaks it
-- output: variant, objective, what, value, expected, problem
-- param: variant variant optional
-- tolerance: 1e-12 * max(1, |value|), on values of one table or of states (all float64)
with search as (
    select s.*, case when s.objective = 'score' then -1 else 1 end as up
    from strategy_search as s
    where getvariable('variant') is null or s.variant = getvariable('variant')
),

optimum as (
    select variant, objective, value as best
    from search
    where kind = 'optimal'
),

start as (
    -- the start state: every tile open, the largest open sum
    select variant, objective, value
    from states
    where getvariable('variant') is null or variant = getvariable('variant')
    qualify row_number() over (partition by variant order by open_sum desc) = 1
),

lines as (
    select
        s.variant, s.objective, s.kind || ' ' || s.spec as what, s.gap as value,
        greatest(0, (o.best - s.value) * s.up) as expected,
        case
            when o.best is null then 'no optimal line for this objective'
            when not abs(s.gap - greatest(0, (o.best - s.value) * s.up))
                <= 1e-12 * greatest(1, abs(o.best))
                then 'gap is not what the line loses against optimal play'
            when (s.value - o.best) * s.up > 1e-12 * greatest(1, abs(o.best))
                then 'a line beats optimal play'
        end as problem
    from search as s
    left join optimum as o using (variant, objective)
),

starts as (
    select
        o.variant, o.objective, 'optimal line' as what, o.best as value, t.value as expected,
        'the optimal line is not the start state''s value' as problem
    from optimum as o
    join start as t using (variant, objective)
    where not abs(o.best - t.value) <= 1e-12 * greatest(1, abs(t.value))
),

ranked as (
    select
        variant, objective, 'rule rank ' || rank || ' of ' || size || ' keys' as what,
        value, lag(value) over w as expected,
        case when (value - lag(value) over w) * up > 1e-12 * greatest(1, abs(value))
            then 'a rule ranks below a worse one' end as problem
    from search
    where kind = 'rule'
    window w as (partition by variant, objective, size order by rank)
),

curve as (
    select e.*, case when e.objective = 'score' then -1 else 1 end as up
    from strategy_exceptions as e
    where getvariable('variant') is null or e.variant = getvariable('variant')
),

steps as (
    select
        c.variant, c.objective, 'exception ' || c.n as what, c.value,
        lag(c.value) over w as expected,
        case
            when c.n <> row_number() over w - 1 then 'the exceptions are not numbered 0, 1, 2, ...'
            when c.n = 0 and not abs(c.value - r.value) <= 1e-12 * greatest(1, abs(r.value))
                then 'the curve does not start at its rule''s value'
            when c.n > 0 and (lag(c.value) over w - c.value) * c.up
                > 1e-12 * greatest(1, abs(c.value))
                then 'the value got worse'
            when c.n > 0 and not abs(c.gain - (c.value - lag(c.value) over w) * c.up)
                <= 1e-12 * greatest(1, abs(c.value))
                then 'gain is not the change of value'
        end as problem
    from curve as c
    left join search as r
        on r.variant = c.variant and r.objective = c.objective and r.kind = 'rule'
        and r.spec = c.spec
    window w as (partition by c.variant, c.objective order by c.n)
),

orphans as (
    -- strategy rows of a variant without states rows: written for a variant not built, which
    -- every query refuses, so no one could read them
    select distinct
        o.variant, o.objective, o.what, null::double as value, null::double as expected,
        'strategy rows of a variant that is not built (no states rows)' as problem
    from (
        select variant, objective, 'strategy_search' as what from search
        union all
        select variant, objective, 'strategy_exceptions' from curve
    ) as o
    anti join (select distinct variant from states) as built using (variant)
),

final as (
    select variant, objective, what, value, expected, problem from lines where problem is not null
    union all
    select * from orphans
    union all
    select * from starts
    union all
    select variant, objective, what, value, expected, problem from ranked where problem is not null
    union all
    select variant, objective, what, value, expected, problem from steps where problem is not null
    order by variant, objective, what
)

select * from final
