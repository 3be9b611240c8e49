-- name: strategy_exceptions
-- description: The exceptions worth learning on top of a variant's best simple rule, in the order they pay most, each with the value of the rule and the exceptions so far (the curve "value with n exceptions").
-- inputs: strategy_exceptions, states
-- grain: one row per number of exceptions n (0: the rule alone)
-- output: n, exception (in words: "with 1 2 3 7 open and a roll of 7, shut 7, not 3 4"), tiles, roll (null for a choice of dice), move, instead_of (what the rule, with the exceptions before, plays there), dice, instead_of_dice (a choice of dice), reach (probability that play reaches that position and roll), gain (what the exception adds to the value from the start), value (after n exceptions), gap (value still lost against optimal play), spec (the rule the curve starts from)
-- param: variant variant default classic
-- param: objective text one of shut,score,target optional
-- param: top int 0..50 default 50
-- needs rows in: strategy_exceptions
-- built by: stb-pipeline strategies
-- families: shutbox
-- shows: n, exception, gain, value, gap (exception folds)
with params as (
    select
        coalesce(getvariable('variant'), 'classic') as variant,
        getvariable('objective') as asked,
        coalesce(getvariable('top'), 50) as top
),

chosen as (
    select
        p.variant,
        p.top,
        coalesce(p.asked, (select any_value(s.objective) from states as s where s.variant = p.variant))
            as objective
    from params as p
),

final as (
    select
        e.n, e.exception, e.tiles, e.roll, e.move, e.instead_of, e.dice, e.instead_of_dice,
        e.reach, e.gain, e.value, e.gap, e.spec
    from strategy_exceptions as e
    join chosen as c using (variant, objective)
    where e.n <= c.top
    order by e.n
)

select * from final
