"""What every table and column means; `data/README.md` is generated from this.

Regenerate with ``python -m pipeline.analysis.schema_docs > data/README.md``; a test fails when
the file is out of date, and another checks that every column a build writes is described here.
"""

from __future__ import annotations

from pipeline.games.shutbox.custom import SEPARATE_TILES

#: The custom boxes built without a graph and stored on their own.
BIG = f"{SEPARATE_TILES} tiles or more"

#: Table name -> (what one row is, {column: meaning}).
#: The mask columns: only a streamed build (big custom boxes, see BIG) fills them.
MASK_DOC = (
    "the tiles shut as a bitmask, bit t-1 for tile t; set only by the streamed build of big "
    f"custom boxes ({BIG}), whose tables leave the list and text columns (move, "
    "best_move, tiles, next_tiles, open_tiles) null to stay small; null otherwise"
)

TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "states": (
        "one state of one variant",
        {
            "variant": "variant name (see `stb-pipeline variants`)",
            "state_id": "canonical integer id of the state within its game (Shut the Box: bitmask "
            "of open tiles, bit i-1 for tile i; Double Shutter: `state` read as a base-3 number)",
            "state": "Double Shutter: one digit per column, column 1 first, the tiles down in it "
            "(0 both up, 1 front down and back up, 2 both down; start 000000000)",
            "tiles": 'open tiles in increasing order: digits ("1245") up to 9 tiles, '
            'comma-separated above; "" when shut. Double Shutter: the standing tiles as '
            '"front=1234 back=98" (each row in increasing order, "-" for none; the form '
            "`expect` and `move` accept)",
            "open_tiles": "open tiles as a list of integers (Double Shutter: front tile t as t, "
            "back tile t as -t)",
            "front_tiles": "Double Shutter: standing front tiles, increasing",
            "back_tiles": "Double Shutter: standing back tiles, increasing (back tile 10 - i "
            "stands behind front tile i)",
            "n_open": "number of open tiles",
            "open_sum": "sum of the open tiles (Double Shutter: face values of both rows)",
            "exposed_sum": "Double Shutter: sum of the tiles that can be shut now (standing front "
            "tiles, and back tiles whose front tile is down); one die is allowed when <= 6",
            "score": "final score if the game ended here (sum of open tiles, or digital score; "
            "Double Shutter: 2 x standing front tiles + standing back tiles)",
            "player": "N-player games: whose turn it is, the seat 1..N (null for one-player "
            "variants)",
            "p1_score": "two players (sum scoring): player 1's score, which player 2 must get "
            "below; the state id is p1_score * 2**tiles + bitmask (null for player 1's states)",
            "players": "N-player games: the number of players N (2..6)",
            "best_score": "N-player games: the best (lowest) score of the players before the "
            "mover (null for player 1). The state id is block * 2**tiles + bitmask, block "
            "= (best_score * (N-1) + best_count - 1) * (N-1) + player - 2 (0 for player 1)",
            "best_count": "N-player games: how many earlier players share best_score",
            "share_holder": "N-player games: the expected share of the win (payoff stake: "
            "expected winnings, in stakes) of each earlier player holding best_score, under "
            "optimal play from here (null for player 1)",
            "share_beaten": "N-player games: the same for each earlier player already above "
            "best_score (0 for a share of the win; null when there is none)",
            **{
                f"share_{k}": f"N-player games: player {k}'s expected share of the win (payoff "
                "stake: expected winnings) under optimal play from here; null for seats before "
                "the mover (see share_holder, share_beaten) and beyond N. The shares of a state "
                "add up to 1 (stake: 0)"
                for k in range(1, 7)
            },
            "terminal": "true when play is over in this state (for Shut the Box: the shut box)",
            "rank": "solve order: every move leads to a state of lower rank",
            "objective": "what `value` measures: shut = P(shut all tiles), score = expected final "
            "score, target = P(final score <= target), wins = the expected share of the win of the "
            "player to move (N-player; a tie for the lowest score splits it), stake = the "
            "expected winnings of the player to move, in stakes (N-player, payoff stake)",
            "maximise": "true when the player maximises `value` (false: minimises)",
            "value": "value of the state under optimal play (float64), per `objective`; null "
            "after `enumerate` alone",
            "value_exact": "the value as an exact fraction, e.g. 466473281/6530347008 (only after "
            "`solve --exact` or `build --exact`)",
            "dice": "number of dice the optimal player rolls here (null when terminal)",
            "choice_options": "how many numbers of dice the rules allow here (2 where one die is "
            "optional)",
            "residual": "the solver's bound on |value - its Bellman recomputation|: 0 for backward "
            "induction, the last sweep's largest change for value iteration, twice the proven "
            "error bound for Knucklebones boards built without a graph (`verify` allows "
            "max(1e-12 * max(1, |value|), residual))",
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
            "move_mask": MASK_DOC,
            "move": "tiles shut (null when no move is legal; Double Shutter: back tiles negative, "
            "[1, -9] = front 1 and the back 9 behind it)",
            "next_state_id": "state after the move (null when the game ends)",
            "next_tiles": "its open tiles",
            "reward": "value added by the edge: the final value when the game ends, else 0",
            "sign": "factor on the next state's value: edge value = reward + sign * "
            "value(next_state_id); -1 where the turn passes to the other player (two players); "
            "0 where it passes to the next of three or more (reward: the mover's payoff)",
            "kind": "what the row is: `move` (a move is made), `end` (no legal move: the game "
            "ends) or `pass` (no legal move: the other player's turn, two-player); null only in "
            f"the streamed edges of boxes of {BIG} (`build --edges`)",
        },
    ),
    "policy": (
        "one (state, roll) of one variant: the optimal move",
        {
            "variant": "variant name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "roll": "dice total",
            "stuck": "true when no move is legal (the game ends); null in the files of boxes of "
            f"{BIG}, where it is `best_move_mask is null`",
            "best_move_mask": MASK_DOC,
            "best_move": "the optimal tiles to shut (null when stuck); ties go to the move "
            "holding the highest tile where they differ (Double Shutter: the highest front tile, "
            "then the highest back tile)",
            "next_state_id": f"state after the best move; null in the files of boxes of {BIG}, "
            "where it is `xor(state_id, best_move_mask)` (readers here fill both in)",
            "next_tiles": "its open tiles",
            "value": "value after the best move (the final value when stuck)",
            "n_optimal": "number of legal moves that tie for best (within 1e-12, relative)",
            "n_moves": "number of legal moves",
            "kind": "what the row is: `move` (a move is made), `end` (no legal move: the game "
            "ends) or `pass` (no legal move: the other player's turn, two-player); null in the "
            f"files of boxes of {BIG}, where it is `end` when `best_move_mask` is null and `move` "
            "otherwise (readers here fill it in, so it is never null to them)",
        },
    ),
    "moves": (
        "one legal move of one (state, roll)",
        {
            "variant": "variant name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "roll": "dice total",
            "move_mask": MASK_DOC,
            "move": "tiles shut (Double Shutter: back tiles negative)",
            "next_state_id": "state after the move",
            "next_tiles": "its open tiles",
            "value": "value of the state after the move",
            "regret": "value lost against the best move (0 for an optimal move)",
            "is_best": "true for the move the policy table picks",
        },
    ),
    "summary": (
        "one headline figure of one variant (built for games that report figures: Double Shutter)",
        {
            "variant": "variant name",
            "figure": "what `value` is: min_expected_score (the optimal expected final score), "
            "p_not_zero (P(final score != 0) under the strategy maximising P(score = 0)), "
            "p_above (p(n) = P(final score > n) under the strategy maximising P(score <= n), "
            "n = `parameter`). N-player games, for player `parameter` under optimal play: "
            "expected_payoff, p_shut (shuts the box), p_points (wins alone on points), "
            "payoff_shut_chaser (the payoff when that player maximises P(shut) instead, rolling "
            "on until stuck even once below the best score, the others playing for theirs "
            "knowing it), loss_shut_chaser (what that costs); p_tie (the lowest score is "
            "shared; no parameter)",
            "objective": "what the strategy behind the figure optimises: score (minimise the "
            "expected score), shut (maximise P(score = 0)), target (maximise P(score <= "
            "parameter)); N-player games: wins or stake, the variant's objective",
            "parameter": "the target n of objective target; N-player games: the player (null "
            "otherwise)",
            "value": "the figure, at the start state (float64)",
        },
    ),
    "benchmarks": (
        "one strategy of one variant, evaluated exactly (`build`) or by simulation "
        "(`benchmark`, `knucklebones benchmark`); a win is a game that ends with every tile "
        "shut (Knucklebones: a game won against `opponent`)",
        {
            "variant": "variant name",
            "strategy": "strategy name (see the README's strategy list)",
            "method": "exact (policy evaluation, no sampling), simulation (Monte Carlo) or "
            "exact choices (Knucklebones players rated against exact values, `knucklebones rate`)",
            "games": "games simulated (null for exact)",
            "wins": "games won, every tile shut (null for exact)",
            "win_rate": "P(every tile shut): exact, or wins / games",
            "ci_low": "lower end of the 95 % Wilson interval of win_rate (null for exact)",
            "ci_high": "upper end of the 95 % Wilson interval of win_rate (null for exact)",
            "expected_score": "expected final score (sum of open tiles, or digital score): "
            "exact, or the simulated mean",
            "seconds": "time to evaluate (exact) or to play the games (simulation, after "
            "compiling)",
            "games_per_second": "games / seconds (null for exact)",
            "seed": "random seed of the simulation (null for exact)",
        },
    ),
    "reach": (
        "one state of one variant under one strategy, played from the start",
        {
            "variant": "variant name",
            "strategy": "strategy name",
            "state_id": "the state",
            "tiles": "its open tiles",
            "reach_prob": "probability that a game played with the strategy visits the state",
            "end_prob": "probability that such a game ends in the state (stuck there, or shut)",
            "value": "value of the state when the strategy is played from it, per the "
            "variant's objective (compare states.value, the optimal one)",
        },
    ),
    "node_reach": (
        "one (state, roll) of one variant under one strategy, played from the start; only "
        "those the strategy or optimal play can reach (the rest have probability 0)",
        {
            "variant": "variant name",
            "strategy": "strategy name",
            "state_id": "state before the roll",
            "tiles": "its open tiles",
            "roll": "dice total",
            "reach_prob": "probability that a game played with the strategy reaches this state "
            "and rolls this total",
            "move": "the tiles the strategy shuts (null when no move is legal, and for random "
            "where it mixes several moves)",
            "next_state_id": "state after that move (null when move is null)",
            "kind": "what the row is, never null: `move` (the strategy's one move), `mixed` "
            "(random: several moves, each with a probability), `end` (no legal move: the game "
            "ends) or `pass` (no legal move: the other player's turn)",
        },
    ),
    "strategy_search": (
        "one line of the rule search of a one-player box for one objective: optimal play, a "
        "named strategy, or one of the best rules of the family (up to three move keys, each "
        "larger or smaller first, and a one-die threshold where the rules offer one die; written "
        "by the strategies stage: `build` for boxes of at most 9 tiles without a choice of dice, "
        "`stb-pipeline strategies` for any box with a graph)",
        {
            "variant": "variant name",
            "objective": "what `value` measures: the variant's own objective, or the other of "
            "shut (P(shut)) and score (the expected final score)",
            "kind": "`optimal` (the solver's play for this objective), `named` (one of the eight "
            "named strategies; they roll the dice the variant's own solver rolls) or `rule` (a "
            "rule of the family)",
            "size": "how many keys the rule uses (a rule is listed with the fewest keys that play "
            "the same moves; a named strategy: its ranking keys); null for optimal and random",
            "rank": "a rule's place among the distinct rules of its size, best first (1 = the "
            "best rule of that many keys); null otherwise",
            "rule": "the rule in words (ties left by its keys go to the move holding the "
            "highest tile where the moves differ)",
            "spec": "the rule as `play --rule` takes it: keys max-KEY or min-KEY joined by "
            "commas (keys: high, count, low, top, score, totals, chance, small, smalls; see "
            "docs/commands.md), then one-die-leT (roll one die once the open tiles sum to T or "
            "less) or one-die-never where the rules offer one die; the strategy's name for "
            "named rows",
            "one_die_at_most": "the rule's one-die threshold T (0: never); null where the rules "
            "leave no choice of dice",
            "value": "the value from the start under this play, per `objective` (exact: policy "
            "evaluation, no sampling)",
            "gap": "value lost against optimal play for this objective (never negative)",
            "p_shut": "P(every tile shut) under the same play",
            "expected_score": "the expected final score under the same play",
            "equivalent": "how many rules of the family play exactly these moves",
            "searched": "how many rules of this many keys were priced (every order of keys, "
            "both directions, every one-die threshold)",
            "policies": "how many distinct plays those rules make, whose simplest rule has this "
            "many keys",
        },
    ),
    "strategy_exceptions": (
        "one step of the exceptions curve of a box's best rule (of at most three keys) for "
        "one objective: n = 0 is the rule alone, then each (position, roll) override, or "
        "(position) choice of dice, that gains the most under the play so far, recomputed "
        "exactly after each, up to 50",
        {
            "variant": "variant name",
            "objective": "the objective the rule and its exceptions are chosen for",
            "size": "how many keys the rule uses",
            "spec": "the rule, as `play --rule` takes it",
            "n": "how many exceptions are learnt (0: the rule alone)",
            "state_id": "the position of the exception (null at n = 0)",
            "tiles": "its open tiles",
            "roll": "the roll of a move exception (null for a choice of dice)",
            "move": "the tiles to shut there instead (null for a choice of dice)",
            "instead_of": "what the rule, with the exceptions before it, shuts there",
            "dice": "a choice-of-dice exception: the dice to roll instead",
            "instead_of_dice": "the dice the rule rolls there",
            "exception": 'the exception in words ("with 1 2 3 7 open and a roll of 7, shut 7, '
            'not 3 4")',
            "reach": "probability that the play before this exception reaches the position "
            "and roll (0 for an exception taken only to let later ones pay: see "
            "docs/benchmarks.md)",
            "gain": "what the exception adds to the value from the start (for the score: how "
            "much it lowers it)",
            "value": "the value from the start with the first n exceptions",
            "gap": "value still lost against optimal play",
        },
    ),
    "decisions": (
        "one legal column of one Knucklebones decision (a position and a die), written beside "
        "the full game's lean `states` (`variants/knucklebones*/decisions.parquet`): the "
        "openings and a fixed sample, with the column each heuristic player picks; joined "
        "to `states` on `next_state_id` it prices every column exactly "
        "(`knucklebones_openings`, `knucklebones_perfect_loss`)",
        {
            "variant": "the variant whose build wrote it (both objectives write the same rows)",
            "kind": "`opening` (the first two plies, every die) or `sample` (every decision of "
            "`games` random-vs-random games played with `seed`)",
            "decision": "the decision's number in the table, from 0 (its rows share it)",
            "ply": "placements made before it in its game (0: the empty board)",
            "state_id": "the position, seen by the player to move (the `states` id)",
            "board": "the position as `mover;opponent`, columns in play order joined by `/`, "
            "each column its dice as digits (`_` empty)",
            "roll": "the die to place",
            "column_number": "the column it goes in, 1 = first (only columns with room)",
            "next_state_id": "the position after it, seen by the opponent: the column is worth "
            "1 - value there in the wins table, minus value in the score table",
            "pick_greedy": "whether greedy play (best immediate score difference, ties at "
            "random) picks this column",
            "pick_seed_d4": "whether the Rust Knucklebones solver's heuristic searched to depth "
            "4 picks it",
            "pick_ours_d2": "whether our search to depth 2 picks it",
            "games": "random-vs-random games of the sample",
            "seed": "seed of the sample and of the players' tie-breaks (each player's own "
            "generator: seed and its name)",
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
        "difference, `seed-d2` = the Rust Knucklebones solver's heuristic searched to depth 2)",
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
        # `knucklebones rate`: method 'exact choices', one row per player rated
        "decisions": "Knucklebones rating: held-out (position, die) decisions with two or more "
        "distinct moves",
        "optimal": "Knucklebones rating: share of decisions where the pick is exactly optimal "
        "in win chance",
        "middle_decisions": "Knucklebones rating: decisions with at most two thirds of both "
        "boards' slots filled",
        "optimal_middle": "Knucklebones rating: `optimal` over the middle-game decisions",
        "mean_regret": "Knucklebones rating: win chance lost per decision against the best choice",
        "max_regret": "Knucklebones rating: the largest win chance lost at one decision",
        "mean_points_lost": "Knucklebones rating: expected score difference lost per decision "
        "against the score objective's best choice",
        "ms_per_move": "Knucklebones rating: mean milliseconds of the player's picks (one core)",
    }
)


#: The text of data/README.md before the tables (:func:`render` fills in the figures).
INTRO = """\
# data/

Generated tables (not committed): `stb-pipeline build --variant all` writes them here.

## Layout

- `<table>.parquet`: the shared tables. They hold every variant of `build --variant all`
  and every other variant built here, except the big ones below; filter on `variant`.
- `variants/<variant>/<table>.parquet`: the tables of a variant stored on its own: the
  big Knucklebones boards (`knucklebones-2x3`, `-3x2`, `-3x3-d4` and their `-score`
  twins) and custom boxes of {big}. Rebuilding one variant never rewrites
  another's rows. Custom boxes of {big} are solved without a graph and write `states`
  and `policy` (add `--moves`, `--edges` for those tables); their list and text columns
  are null and the `*_mask` columns say the same. Their policy leaves `next_state_id`
  and `stuck` null too, as they follow from the row (`xor(state_id, best_move_mask)`;
  `best_move_mask is null`): `stb-pipeline query`, `move` and the Python API fill
  them in.
- The N-player variants other than `two-player` (`three-player`, `four-player`,
  `three-player-two-dice`, `two-player-stake`, `--players N`) are stored on their own
  too, solved without a graph: `states`, `policy` and `moves`, no `edges`.
- The full Knucklebones game (`knucklebones`, `knucklebones-score`, built by `build
  --device cuda` on one GPU) writes only a lean `states` table: `state_id`, `value`
  (rounded to float32; `residual` bounds its error, the solver's plus the rounding) and
  the constant `variant`, `objective`, `maximise`, sorted by `state_id` in row groups of
  1,048,576 ids with statistics; the other columns are not written (they follow from
  the id: a union by name reads them as null), and there is no policy: `knucklebones
  solve` ranks the columns by their successors' values.
- Every table has one schema whatever it holds (but the full game's lean `states`): the
  columns below, in this order; a column that does not apply to a game is null. Read one
  table across all its files with `pl.scan_parquet(['data/policy.parquet',
  *glob('data/variants/*/policy.parquet')], missing_columns='insert')`,
  or in DuckDB `read_parquet(['data/policy.parquet', 'data/variants/*/policy.parquet'],
  union_by_name = true)` once a variant has files of its own; `stb-pipeline query` and
  the Python API read both for you.
- `stb.duckdb`: the catalog, a DuckDB database with one view per table over all its
  files, big boxes decoded and `kind` filled in (`duckdb -readonly data/stb.duckdb -c
  "from policy where variant = 'four-player' limit 5"`); every build rewrites it. In
  Python, `pipeline.scan` (polars) and `pipeline.dataset` (pyarrow) read the same files.
- `states.lookup` (beside `states.parquet` and each `variants/<name>/states.parquet` whose
  values fit in 1 GiB, every variant but the full game): every state's value by state id in a
  plain binary file, rewritten as each commit of that states file ends, from which
  `stb-pipeline expect` answers without loading numpy or DuckDB. It records the states file it
  was made from (its inode, times and size, and up to 32 MB its sha256) and the sha256 of each
  64 KiB block of its values, and is used only when they hold for the file and the block an
  answer reads (otherwise `expect` reads the Parquet file, as every other reader does);
  deleting it costs only speed (`pipeline/store/lookup.py`).

Each file
stores its rule sets as Parquet key-value metadata (`stb.rules`, JSON by variant).
`manifest.json` records each table's rows and sha256 and what built each variant (rules,
package version, code hash, seeds); `stb-pipeline verify` checks the tables against it
and against the data contracts in `queries/contracts/`.
Rows come variant by variant; within a variant the start state's rows come first, then
the other states by `state_id` (per strategy in `reach` and `node_reach`), so the first
rows a reader sees are the opening. Tables written a slice at a time (Knucklebones
boards above 2x2, boxes of {big}, the N-player games stored on their own) keep
the solver's order (an N-player game's start state comes in its last block).
The shared tables are zstd-compressed; a row group holds one variant's rows (at most
{slice_rows:,}), with min/max statistics on the columns readers filter by
({filter_columns}),
so DuckDB and polars read only the row groups of the variants asked for.
This file is generated by `python -m pipeline.analysis.schema_docs > data/README.md`.
"""


def render() -> str:
    """The text of data/README.md."""
    from pipeline.store import merging

    filters = ", ".join(f"`{c}`" for c in merging.FILTER_COLUMNS)
    lines = [INTRO.format(big=BIG, slice_rows=merging.SLICE_ROWS, filter_columns=filters)]
    for name, (grain, columns) in TABLES.items():
        lines += [f"## {name}.parquet", "", f"One row: {grain}.", "", "| column | meaning |"]
        lines.append("| --- | --- |")
        lines += [f"| `{col}` | {text} |" for col, text in columns.items()]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
