"""Knucklebones search: decision time by depth, and our leaf evaluation against the Rust
Knucklebones solver's.

Prints two tables:

1. Median and 90th-percentile decision time of our expectimax at depths 1..6 over positions
   from self-play games (a fresh transposition table per position, so no reuse between
   positions flatters the times). Target from issue 6: depth 4 under 500 ms median.
2. Our evaluation against the Rust solver's heuristic at equal depth (seats alternated): wins,
   draws, losses, win rate with a 95 % interval.

Usage: python benchmarks/bench_knucklebones.py [--positions 200] [--games 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pipeline import progress
from pipeline.apps.knucklebones.match import Player, match
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players.search import OURS, Searcher


def sample_positions(game: Knucklebones, n: int, seed: int) -> list[tuple[np.ndarray, int]]:
    """(pairs, die) decision points from greedy self-play games."""
    rng = np.random.default_rng(seed)
    player = Player(game, "greedy")
    out: list[tuple[np.ndarray, int]] = []
    while len(out) < n:
        pairs = np.zeros(3, dtype=np.int64)
        while not game.finished(pairs) and len(out) < n:
            face = int(rng.integers(1, 7))
            out.append((pairs.copy(), face))
            pairs = game.play(pairs, player(pairs, face, rng), face)
    return out


def decision_times(game: Knucklebones, positions: list, depths: range) -> Table:
    """Median and p90 decision time per depth."""
    Searcher(game).best_move(*positions[0], 1)  # compile outside the timings
    table = Table("depth", "positions", "median ms", "p90 ms", "max ms")
    for depth in depths:
        times = []
        for pairs, face in progress.tracked(
            positions, f"decision time, depth {depth}", unit="positions"
        ):
            searcher = Searcher(game, tt_bits=20)
            t0 = time.perf_counter()
            searcher.best_move(pairs, face, depth, OURS)
            times.append(1000 * (time.perf_counter() - t0))
        t = np.array(times)
        table.add_row(
            str(depth),
            str(t.size),
            f"{np.median(t):.2f}",
            f"{np.percentile(t, 90):.2f}",
            f"{t.max():.1f}",
        )
    return table


def head_to_head(game: Knucklebones, games: int, seed: int, depths: range) -> Table:
    """Ours against the Rust solver's heuristic at the same depth."""
    table = Table("depth", "games", "wins", "draws", "losses", "win rate (95% CI)", "mean diff")
    for d in depths:
        with progress.task(f"ours against the Rust solver's, depth {d}", games, "games") as job:
            r = match(game, f"ours-d{d}", f"seed-d{d}", games, seed + d, job.advance)
        table.add_row(
            str(d),
            str(games),
            str(r["wins"]),
            str(r["draws"]),
            str(r["losses"]),
            f"{r['win_rate']:.3f} ({r['ci_low']:.3f}-{r['ci_high']:.3f})",
            f"{r['expected_score']:+.2f}",
        )
    return table


def main() -> None:
    """Run both measurements and print their tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--games", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-depth", type=int, default=6)
    ap.add_argument("--h2h-depths", type=int, default=3)
    args = ap.parse_args()
    game = Knucklebones(KnuckleRules())
    console = Console()
    positions = sample_positions(game, args.positions, args.seed)
    console.print("decision time of our search (fresh table per position)")
    console.print(decision_times(game, positions, range(1, args.max_depth + 1)))
    console.print("our evaluation against the Rust solver's at equal depth")
    console.print(head_to_head(game, args.games, args.seed, range(1, args.h2h_depths + 1)))


if __name__ == "__main__":
    main()
