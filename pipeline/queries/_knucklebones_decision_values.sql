-- name: _knucklebones_decision_values
-- description: Every decision of the decisions table of a Knucklebones board solved exactly (the openings and the sample), each legal column with its exact worth in both objectives: the view knucklebones_decision_values, which knucklebones_openings and knucklebones_perfect_loss read.
-- inputs: decisions, states, rules
-- grain: one row per legal column of each decision (the decisions table's rows)
-- output: the decisions table's columns, win (P(win) after the column, a draw counting 1/2), diff (expected final score difference after it, points)
-- param: variant variant default knucklebones
-- families: knucklebones
--
-- A helper, not a query (its name starts with _): it creates a view. `stb-pipeline query` runs
-- it before each query whose header says `-- uses: _knucklebones_decision_values`; in the
-- duckdb command, .read it first. A column's value is its successor's, seen from the other side
-- (1 - P(win) in the wins table, minus the difference in the score table), looked up by id in
-- the states table of each objective, found by the rules the tables record.
create or replace temp view knucklebones_decision_values as
with params as (
    select coalesce(getvariable('variant'), 'knucklebones') as variant
),

board as (
    -- the board of the variant asked for, from the rules recorded with the states table
    select
        (r.rules ->> 'columns')::integer as columns,
        (r.rules ->> 'rows')::integer as rows,
        (r.rules ->> 'faces')::integer as faces
    from rules as r
    join params using (variant)
    where r.game = 'knucklebones'
),

twins as (
    -- both objectives of that board (the wins and the score variant)
    select r.variant, r.rules ->> 'objective' as objective
    from rules as r
    join board as b
        on (r.rules ->> 'columns')::integer = b.columns
        and (r.rules ->> 'rows')::integer = b.rows
        and (r.rules ->> 'faces')::integer = b.faces
    where r.game = 'knucklebones'
),

chosen as (
    select d.*
    from decisions as d
    join params using (variant)
),

valued as (
    -- each column's exact worth: its successor's value from the other side, in both tables
    select
        o.*,
        1 - w.value as win,
        -s.value as diff
    from chosen as o
    join states as w
        on w.state_id = o.next_state_id
        and w.variant = (select min(variant) from twins where objective = 'wins')
    join states as s
        on s.state_id = o.next_state_id
        and s.variant = (select min(variant) from twins where objective = 'score')
)

select * from valued;
