"""Knucklebones players against exact values (issues 42 and 47): every player the project
ships, on held-out exact decisions of the full game and of every board whose exact values a CPU
has, in one run.

The full game (3x3-d6) is rated on its packaged file of exact decisions (3,828 of them, from a
GPU solve made apart from this project: ``players/models/3x3-d6-decisions.md``; ``--decisions-
file`` names another, as the set kept outside the project). For the small boards (3x3 with a
d4, 3x2 with a d6: their packaged held-out labelled sets, or solved here in a minute or two
each, or read from their tables in --data-dir) the run
draws held-out decisions from games between the project's players (`knucklebones rate`'s
positions: a fixed tenth of the state ids no evaluator is trained on). It rates greedy, the
Rust solver's heuristic at depth 4, our search at depths 1 to 6, the distilled evaluator's
search at depths 1 to 4 where the board has one (and at depths 3 and 4 with their close calls
6 deep, ``net-d4+6``, or 5 on the full game), and the board's default player (the one
answer's), choice by choice: share of exactly optimal choices (overall and in the middle
game), mean and worst regret in win chance, points lost, milliseconds a move (one core). The
baseline is `ours-d4`, the search the answer played before: each row's time beside it. The
next table is the worst board for each player. The last times moves through whole games from
the empty boards (CPU time of one thread; the openings a uniform draw seldom holds): the
baseline, ours-d5, the board's default player, and the one answer itself (what `solve`,
`play`, `serve` and the API do per move: book, search to the end, or the player, and the
position's own value). Peak memory is the process's.

Usage: python benchmarks/bench_knucklebones_players.py [--boards 3x3-d6,3x3-d4,3x2-d6]
       [--decisions 3000] [--games 3000] [--seed 7] [--data-dir data] [--json out.json]
       [--decisions-file FILE] [--timed-games 10]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pipeline import progress
from pipeline.apps.knucklebones.distill import held_out_positions
from pipeline.apps.knucklebones.rating import Rating, decisions, rate
from pipeline.apps.knucklebones.self_play import held_decisions
from pipeline.games.knucklebones.game import KnuckleRules, board_game
from pipeline.games.knucklebones.players import artefacts
from pipeline.games.knucklebones.players.engine import Play, Player

BASELINE = "ours-d4"


def players_of(rules: KnuckleRules) -> list[str]:
    """Every player rated on a board: the evaluator's only where the board has one (and the
    full game's close calls searched 5 deep, not 6: a move's time)."""
    names = ["greedy", "seed-d4", *(f"ours-d{d}" for d in range(1, 7))]
    if artefacts.packaged_evaluator(rules.columns, rules.rows, rules.faces) is not None:
        close = "+5" if (rules.columns, rules.rows, rules.faces) == (3, 3, 6) else "+6"
        names += [f"net-d{d}" for d in range(1, 5)] + [f"net-d3{close}", f"net-d4{close}"]
    return names


def default_player(game: object, rules: KnuckleRules) -> tuple[str, Play]:
    """The one answer's player of the board (its name and depth as the answer plays it)."""
    from pipeline.games.knucklebones.columns import BoardRules

    board = BoardRules(game)  # type: ignore[arg-type]
    name = board.player_name(board.default_depth or 3, board.deeper, board.leaves)
    return f"default ({name})", Player(game, name)  # type: ignore[arg-type]


def timed_players(game: object, rules: KnuckleRules) -> list[str]:
    """The players timed through whole games: the baseline, the deepest search rated, and the
    board's default player."""
    name, _ = default_player(game, rules)
    return [BASELINE, "ours-d5", name.removeprefix("default (").removesuffix(")")]


def board_rules(text: str) -> KnuckleRules:
    """``3x3-d4`` -> its rules."""
    size, faces = text.split("-d")
    columns, rows = size.split("x")
    return KnuckleRules(int(columns), int(rows), int(faces))


def rate_board(
    rules: KnuckleRules, data_dir: Path | None, games: int, n: int, seed: int, file: Path | None
) -> list[Rating]:
    game = board_game(rules)
    if file is not None or artefacts.decisions_path(rules).exists():
        asked, _ = held_decisions(rules, data_dir, file, n, seed)  # the full game's file
    else:  # held-out positions of games between the project's players, labelled exactly here
        asked = decisions(game, held_out_positions(rules, data_dir, games, seed), n, seed + 1)
    made = {name: Player(game, name) for name in players_of(rules)}
    name, player = default_player(game, rules)
    made[name] = player
    out = []
    for name, player in made.items():
        with progress.task(f"{rules.columns}x{rules.rows}-d{rules.faces}: {name}",
                           total=len(asked)) as job:  # fmt: skip
            out.append(rate(name, player, asked, seed + 2, tick=lambda: job.advance(1)))
    return out


def move_times(game: object, name: str, games: int, seed: int) -> tuple[float, float, float]:
    """(mean, 95th percentile, largest) CPU milliseconds of ``name``'s moves through ``games``
    whole games against itself from the empty boards (seeded dice): the openings and middle
    games that `play` and `serve` meet, which a uniform draw of positions seldom holds."""
    import time

    import numpy as np

    player = Player(game, name)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    start = np.zeros(game.r.columns, dtype=np.int64)  # type: ignore[attr-defined]
    player(start, 1, rng)  # untimed: a first pick compiles
    ms = []
    for _ in range(games):
        pairs = start.copy()
        for _ply in range(200):
            if game.finished(pairs):  # type: ignore[attr-defined]
                break
            die = int(rng.integers(1, game.r.faces + 1))  # type: ignore[attr-defined]
            t0 = time.thread_time()
            col = player(pairs, die, rng)
            ms.append(1000 * (time.thread_time() - t0))
            pairs = game.play(pairs, col, die)  # type: ignore[attr-defined]
    found = np.array(ms)
    return float(found.mean()), float(np.percentile(found, 95)), float(found.max())


def answer_times(text: str, games: int, seed: int) -> tuple[str, float, float, float]:
    """(player, mean, 95th percentile, largest) CPU milliseconds of the one answer (what
    `solve`, `play`, `serve` and the API show: book, search to the end, or the board's player,
    with the position's own value) for every move of ``games`` games from the empty boards in
    which the answer's column is played, no tables built."""
    import tempfile
    import time

    import numpy as np

    from pipeline.answer.answers import for_dir
    from pipeline.games.registry import get_variant

    name = "knucklebones" if text == "3x3-d6" else f"knucklebones-{text}"
    with tempfile.TemporaryDirectory() as empty:
        answers = for_dir(Path(empty))
        variant = get_variant(name)
        rules = answers.board_rules(variant)
        game = rules.game
        rng = np.random.default_rng(seed)
        answers.board(variant, rules.start(), 1, built=False)  # untimed: a first answer compiles
        ms, players = [], set()
        for _ in range(games):
            pairs = np.zeros(game.r.columns, dtype=np.int64)
            while not game.finished(pairs):
                die = int(rng.integers(1, game.r.faces + 1))
                t0 = time.thread_time()
                found = answers.board(variant, rules.position_of(pairs), die, built=False)
                ms.append(1000 * (time.thread_time() - t0))
                players.add(found.player or found.source)
                assert found.best is not None
                pairs = game.play(pairs, found.best.column - 1, die)
    times = np.array(ms)
    who = "the answer (" + ", ".join(sorted(players)) + ")"
    return who, float(times.mean()), float(np.percentile(times, 95)), float(times.max())


def table_of(title: str, ratings: list[Rating]) -> Table:
    base = next((r for r in ratings if r.player == BASELINE), None)
    table = Table("player", "decisions", "optimal", "middle game", "mean regret", "worst regret",
                  "points lost", "ms a move", f"time / {BASELINE}", title=title)  # fmt: skip
    for r in ratings:
        ratio = (
            ""
            if base is None or not base.ms_per_move
            else f"{r.ms_per_move / base.ms_per_move:.2f}"
        )
        table.add_row(
            r.player, f"{r.decisions:,}", f"{r.optimal:.4f}", f"{r.optimal_middle:.4f}",
            f"{r.mean_regret:.6f}", f"{r.max_regret:.4f}", f"{r.mean_points_lost:.3f}",
            f"{r.ms_per_move:.2f}", ratio,
        )  # fmt: skip
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="3x3-d6,3x3-d4,3x2-d6")
    ap.add_argument("--decisions", type=int, default=3000)
    ap.add_argument("--games", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--data-dir", type=Path, default=None, help="read exact values from tables here"
    )
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--timed-games", type=int, default=10, help="whole games a player is timed on")
    ap.add_argument(
        "--decisions-file", type=Path, default=None,
        help="the full game's exact decisions (default: the packaged file)",
    )  # fmt: skip
    args = ap.parse_args()
    console = Console(width=160)
    found: dict[str, list[Rating]] = {}
    for text in args.boards.split(","):
        rules = board_rules(text)
        file = (
            args.decisions_file if (rules.columns, rules.rows, rules.faces) == (3, 3, 6) else None
        )
        found[text] = rate_board(rules, args.data_dir, args.games, args.decisions, args.seed, file)
        console.print(table_of(f"board {text}: held-out decisions, seed {args.seed}", found[text]))
    worst: list[Rating] = []
    names = {r.player.split(" ")[0] for rows in found.values() for r in rows}
    for name in sorted(names):
        rows = [r for rs in found.values() for r in rs if r.player.split(" ")[0] == name]
        if len(rows) == len(found):  # rated on every board: its worst board by share optimal
            worst.append(min(rows, key=lambda r: (r.optimal, -r.mean_regret)))
    console.print(table_of("the worst board of each player rated on every board", worst))
    title = f"whole games from the empty boards ({args.timed_games} a player, CPU ms)"
    times = Table("board", "player", "moves' mean ms", "95th percentile", "largest", title=title)
    for text in args.boards.split(","):
        rules = board_rules(text)
        game = board_game(rules)
        for name in timed_players(game, rules):
            mean, p95, top = move_times(game, name, args.timed_games, args.seed)
            times.add_row(text, name, f"{mean:.2f}", f"{p95:.2f}", f"{top:.2f}")
        who, mean, p95, top = answer_times(text, args.timed_games, args.seed)
        times.add_row(text, who, f"{mean:.2f}", f"{p95:.2f}", f"{top:.2f}")
    console.print(times)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(f"peak memory {peak:.0f} MB; one core; seed {args.seed}")
    if args.json:
        args.json.write_text(json.dumps(
            {k: [r.row() for r in v] for k, v in found.items()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
