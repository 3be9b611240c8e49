"""What every table and column means; `data/README.md` is generated from this.

Regenerate with ``python -m pipeline.schema_docs > data/README.md``; a test fails when the file is
out of date, and another checks that every column a build writes is described here.
"""

from __future__ import annotations

#: Table name -> (what one row is, {column: meaning}).
TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "states": (
        "one state of one variant",
        {
            "variant": "variant name (see `stb-pipeline variants`)",
            "state_id": "canonical integer id of the state within its game (Shut the Box: bitmask "
            "of open tiles, bit i-1 for tile i)",
            "tiles": 'open tiles in increasing order: digits ("1245") up to 9 tiles, '
            'comma-separated above; "" when shut',
            "open_tiles": "open tiles as a list of integers",
            "n_open": "number of open tiles",
            "open_sum": "sum of the open tiles",
            "score": "final score if the game ended here (sum of open tiles, or digital score)",
            "terminal": "true when play is over in this state (for Shut the Box: the shut box)",
            "rank": "solve order: every move leads to a state of lower rank",
            "objective": "what `value` measures: shut = P(shut all tiles), score = expected final "
            "score, target = P(final score <= target)",
            "maximise": "true when the player maximises `value` (false: minimises)",
            "value": "value of the state under optimal play (float64), per `objective`; null "
            "after `enumerate` alone",
            "dice": "number of dice the optimal player rolls here (null when terminal)",
            "choice_options": "how many numbers of dice the rules allow here (2 where one die is "
            "optional)",
            "mover_score": "Knucklebones: total of the player to move. A Knucklebones state is "
            "written in `tiles` as MOVER;OPPONENT, each board its columns separated by / (dice "
            "in increasing order, _ for an empty column); `state_id` is the colex rank of its "
            "multiset of facing column pairs, `n_open` the empty slots of both boards, `score` "
            "the mover's total minus the opponent's, `rank` the empty slots",
            "opponent_score": "Knucklebones: total of the player who moved last",
        },
    ),
    "edges": (
        "one (state, dice, roll, move) successor edge; a roll with no legal move has one row "
        "with a null move",
        {
            "variant": "variant name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "dice": "number of dice rolled",
            "roll": "dice total",
            "prob": "probability of the roll with that many dice",
            "move": "tiles shut (null when no move is legal)",
            "next_state_id": "state after the move (null when the game ends)",
            "next_tiles": "its open tiles",
            "reward": "value added by the edge: the final value when the game ends, else 0",
            "sign": "factor on the next state's value: edge value = reward + sign * "
            "value(next_state_id)",
        },
    ),
    "policy": (
        "one (state, roll) of one variant: the optimal move",
        {
            "variant": "variant name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "roll": "dice total",
            "stuck": "true when no move is legal (the game ends)",
            "best_move": "the optimal tiles to shut (null when stuck); ties go to the move "
            "holding the highest tile where they differ",
            "next_state_id": "state after the best move",
            "next_tiles": "its open tiles",
            "value": "value after the best move (the final value when stuck)",
            "n_optimal": "number of legal moves that tie for best (within 1e-12, relative)",
            "n_moves": "number of legal moves",
        },
    ),
    "moves": (
        "one legal move of one (state, roll)",
        {
            "variant": "variant name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "roll": "dice total",
            "move": "tiles shut",
            "next_state_id": "state after the move",
            "next_tiles": "its open tiles",
            "value": "value of the state after the move",
            "regret": "value lost against the best move (0 for an optimal move)",
            "is_best": "true for the move the policy table picks",
        },
    ),
}


# The benchmarks table is shared: Shut the Box strategies and Knucklebones matches write rows
# of their own variants. Shared columns are described only if nobody described them yet.
_bench = TABLES.setdefault(
    "benchmarks", ("one benchmarked strategy (against one opponent) of one variant", {})
)[1]
for _col, _text in {
    "variant": "variant name (Knucklebones matches: `knucklebones`)",
    "strategy": "the strategy measured (Knucklebones: `ours-dN`, our search to depth N)",
    "method": "how it was measured (`simulation`: games played)",
    "games": "games played",
    "wins": "games won",
    "win_rate": "wins / games",
    "ci_low": "lower end of the 95 % Wilson interval of `win_rate`",
    "ci_high": "upper end of the 95 % Wilson interval of `win_rate`",
    "expected_score": "mean final score (Knucklebones: mean final score difference, ours minus "
    "the opponent's)",
    "seconds": "wall-clock seconds for all the games",
    "games_per_second": "games / seconds",
    "seed": "seed of the random generator (dice and tie-breaks) for this row",
}.items():
    _bench.setdefault(_col, _text)
_bench.update(
    {
        "opponent": "Knucklebones: the opponent (`random`, `greedy` = best immediate score "
        "difference, `seed-d2` = seed 004's heuristic searched to depth 2)",
        "depth": "Knucklebones: our search depth in placements",
        "draws": "Knucklebones: games drawn",
        "losses": "Knucklebones: games lost",
        "draw_rate": "Knucklebones: draws / games",
        "loss_rate": "Knucklebones: losses / games",
        "draw_ci_low": "Knucklebones: lower end of the 95 % Wilson interval of `draw_rate`",
        "draw_ci_high": "Knucklebones: upper end of the 95 % Wilson interval of `draw_rate`",
        "loss_ci_low": "Knucklebones: lower end of the 95 % Wilson interval of `loss_rate`",
        "loss_ci_high": "Knucklebones: upper end of the 95 % Wilson interval of `loss_rate`",
        "median_decision_ms": "Knucklebones: median milliseconds our player took per move",
    }
)


def render() -> str:
    """The text of data/README.md."""
    lines = [
        "# data/",
        "",
        "Generated tables (not committed): `stb-pipeline build --variant all` writes them here.",
        "Every table holds the rows of every built variant; filter on `variant`. Each file",
        "stores its rule sets as Parquet key-value metadata (`stb.rules`, JSON by variant).",
        "This file is generated by `python -m pipeline.schema_docs > data/README.md`.",
        "",
    ]
    for name, (grain, columns) in TABLES.items():
        lines += [f"## {name}.parquet", "", f"One row: {grain}.", "", "| column | meaning |"]
        lines.append("| --- | --- |")
        lines += [f"| `{col}` | {text} |" for col, text in columns.items()]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
