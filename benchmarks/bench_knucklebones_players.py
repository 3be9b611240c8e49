"""Knucklebones players against exact values (issue 42): every player the project ships, on
held-out positions of every board whose exact values a CPU has, in one run.

For each board (3x3 with a d4, 3x2 with a d6: solved here in a minute or two each, or read from
their tables in --data-dir; the full game, 3x3-d6, once its GPU-made labelled set is in the
package: its held-out positions) the run
draws held-out decisions from games between the project's players (`knucklebones rate`'s
positions: a fixed tenth of the state ids no evaluator is trained on) and rates greedy, the
Rust solver's heuristic at depth 4, our search at depths 1 to 6, the distilled evaluator's
search at depths 1 to 4 where the board has one (and at depth 4 with its close calls 6 deep,
``net-d4+6``), and the board's default player (the one
answer's), choice by choice: share of exactly optimal choices (overall and in the middle
game), mean and worst regret in win chance, points lost, milliseconds a move (one core). The
baseline is `ours-d4`, the search the answer played before: each row's time beside it. The
last table is the worst board for each player. Peak memory is the process's.

Usage: python benchmarks/bench_knucklebones_players.py [--boards 3x3-d4,3x2-d6]
       [--decisions 3000] [--games 3000] [--seed 7] [--data-dir data] [--json out.json]
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
from pipeline.games.knucklebones.game import KnuckleRules, board_game
from pipeline.games.knucklebones.players import artefacts
from pipeline.games.knucklebones.players.engine import Play, named_player

BASELINE = "ours-d4"


def players_of(rules: KnuckleRules) -> list[str]:
    """Every player rated on a board: the evaluator's only where the board has one."""
    names = ["greedy", "seed-d4", *(f"ours-d{d}" for d in range(1, 7))]
    if artefacts.packaged_evaluator(rules.columns, rules.rows, rules.faces) is not None:
        names += [f"net-d{d}" for d in range(1, 5)] + ["net-d4+6"]
    return names


def default_player(game: object, rules: KnuckleRules) -> tuple[str, Play]:
    """The one answer's player of the board (its name and depth as the answer plays it)."""
    from pipeline.games.knucklebones.columns import BoardRules

    board = BoardRules(game)  # type: ignore[arg-type]
    depth = board.default_depth or 3
    name = f"{board.player}-d{depth}" + (f"+{board.deeper}" if board.deeper else "")
    return f"default ({name})", named_player(game, name)  # type: ignore[arg-type]


def board_rules(text: str) -> KnuckleRules:
    """``3x3-d4`` -> its rules."""
    size, faces = text.split("-d")
    columns, rows = size.split("x")
    return KnuckleRules(int(columns), int(rows), int(faces))


def rate_board(
    rules: KnuckleRules, data_dir: Path | None, games: int, n: int, seed: int
) -> list[Rating]:
    game = board_game(rules)
    held = held_out_positions(rules, data_dir, games, seed)
    asked = decisions(game, held, n, seed + 1)
    made = {name: named_player(game, name) for name in players_of(rules)}
    name, player = default_player(game, rules)
    made[name] = player
    out = []
    for name, player in made.items():
        with progress.task(f"{rules.columns}x{rules.rows}-d{rules.faces}: {name}",
                           total=len(asked)) as job:  # fmt: skip
            out.append(rate(name, player, asked, seed + 2, tick=lambda: job.advance(1)))
    return out


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
    full = artefacts.path(
        "labelled", KnuckleRules(3, 3, 6)
    ).exists()  # the full game's set, once its GPU call made it
    ap.add_argument("--boards", default="3x3-d6,3x3-d4,3x2-d6" if full else "3x3-d4,3x2-d6")
    ap.add_argument("--decisions", type=int, default=3000)
    ap.add_argument("--games", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--data-dir", type=Path, default=None, help="read exact values from tables here"
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    console = Console(width=160)
    found: dict[str, list[Rating]] = {}
    for text in args.boards.split(","):
        rules = board_rules(text)
        found[text] = rate_board(rules, args.data_dir, args.games, args.decisions, args.seed)
        console.print(table_of(f"board {text}: held-out decisions, seed {args.seed}", found[text]))
    worst: list[Rating] = []
    names = {r.player.split(" ")[0] for rows in found.values() for r in rows}
    for name in sorted(names):
        rows = [r for rs in found.values() for r in rs if r.player.split(" ")[0] == name]
        if len(rows) == len(found):  # rated on every board: its worst board by share optimal
            worst.append(min(rows, key=lambda r: (r.optimal, -r.mean_regret)))
    console.print(table_of("the worst board of each player rated on every board", worst))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(f"peak memory {peak:.0f} MB; one core; seed {args.seed}")
    if args.json:
        args.json.write_text(json.dumps(
            {k: [r.row() for r in v] for k, v in found.items()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
