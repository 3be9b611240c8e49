-- name: verifier_export
-- description: The course assignment's verifier file for a two-player variant: every nonterminal state, each line after all of its nonterminal successors.
-- inputs: states
-- grain: one row per nonterminal state of the variant (P1 states, and P2 states for every possible P1 score)
-- output: line_no (1-based, the file order), line (open tiles increasing without separators, or space-separated above 9 tiles; then P1's score for P2 states; then the mover's expected wins at full precision, comma-separated)
-- param: variant variant default two-player
-- families: nplayer
-- players: 2
with params as (
    select coalesce(getvariable('variant'), 'two-player') as variant
),

nonterminal as (
    select s.rank, s.open_tiles, s.p1_score, s.value
    from states as s
    join params using (variant)
    where not s.terminal
),

layout as (
    -- digits run together up to 9 tiles; above that they need a separator (not a comma)
    select max(list_max(open_tiles)) > 9 as spaced
    from nonterminal
),

final as (
    select
        -- every move shuts a tile (lower rank) and P1's pass goes to P2 (ranks below P1's), so
        -- rank order puts successors first; inside a rank, the assignment's own order: tiles, score
        row_number() over (
            order by n.rank, n.open_tiles, n.p1_score nulls first
        ) as line_no,
        concat_ws(
            ',',
            case
                when l.spaced then array_to_string(n.open_tiles, ' ')
                else array_to_string(n.open_tiles, '')
            end,
            cast(n.p1_score as varchar),
            -- DuckDB writes the shortest text that reads back as the same double
            cast(n.value as varchar)
        ) as line
    from nonterminal as n
    cross join layout as l
    order by line_no
)

select * from final
