-- name: strategy_card
-- description: The rules a person can remember, for one variant and objective, priced exactly: optimal play, the best rule of at most one, two and three keys, that rule with 10 and 50 exceptions learnt, and the named strategies.
-- inputs: strategy_search, strategy_exceptions, states
-- grain: one row per line of the card
-- output: place (the card's order), line (what the row is), rule (in words), spec (the rule as `play --rule` takes it), size (keys the rule uses), exceptions (exceptions learnt on top of the rule), value (per the objective), gap (value lost against optimal play, never negative), p_shut, expected_score (of the same play; null on the exception lines)
-- param: variant variant default classic
-- param: objective text one of shut,score,target optional
-- needs rows in: strategy_search
-- built by: stb-pipeline strategies
-- families: shutbox
-- shows: place, line, rule, p_shut, gap (line and rule fold)
--
-- The objective is the variant's own unless asked (each box is searched for its own objective
-- and for the other of P(shut) and the expected final score). A line "best rule of at most k
-- keys" shows the best of the rules of 1..k keys, so the card never gets worse down the page;
-- the exception lines take the curve's row 10 and 50, or its last row when the rule with
-- fewer exceptions already plays optimally.
with params as (
    select coalesce(getvariable('variant'), 'classic') as variant, getvariable('objective') as asked
),

chosen as (
    select
        p.variant,
        coalesce(p.asked, (select any_value(s.objective) from states as s where s.variant = p.variant))
            as objective
    from params as p
),

search as (
    select s.*
    from strategy_search as s
    join chosen using (variant, objective)
),

best_within as (
    -- the best rule of at most k keys: the best of the best rules of 1..k keys (fewer keys win a tie)
    select limits.k, r.*
    from (values (1), (2), (3)) as limits (k)
    join search as r on r.kind = 'rule' and r.rank = 1 and r.size <= limits.k
    qualify row_number() over (partition by limits.k order by r.gap, r.size) = 1
),

curve as (
    select e.n, e.value, e.gap, e.spec
    from strategy_exceptions as e
    join chosen using (variant, objective)
),

learnt as (
    -- the value with 10 and 50 exceptions (or fewer, where the curve reaches optimal play first)
    select wanted.n as asked, c.*
    from (values (10), (50)) as wanted (n)
    join curve as c on c.n <= wanted.n
    qualify row_number() over (partition by wanted.n order by c.n desc) = 1
),

lines as (
    select 0 as place, 'optimal play' as line, rule, spec, size, null::integer as exceptions,
        value, gap, p_shut, expected_score
    from search
    where kind = 'optimal'
    union all
    select k, 'best rule of at most ' || k || case when k = 1 then ' key' else ' keys' end,
        rule, spec, size, 0, value, gap, p_shut, expected_score
    from best_within
    union all
    select 3 + row_number() over (order by l.asked), 'best rule with ' || l.asked || ' exceptions',
        r.rule, l.spec, r.size, l.n, l.value, l.gap, null, null
    from learnt as l
    join search as r on r.kind = 'rule' and r.spec = l.spec
    union all
    -- the named strategies but optimal play (the first line), after the two exception lines
    select 5 + row_number() over (order by gap, spec), 'named strategy: ' || spec,
        rule, spec, size, null, value, gap, p_shut, expected_score
    from search
    where kind = 'named' and spec <> 'optimal'
),

final as (
    select place, line, rule, spec, size, exceptions, value, gap, p_shut, expected_score
    from lines
    order by place
)

select * from final
