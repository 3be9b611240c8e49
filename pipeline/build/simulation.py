"""`stb-pipeline benchmark`: a game's Monte Carlo strategy benchmark, stored in
benchmarks.parquet."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.games.registry import Variant
from pipeline.games.solved import Solved
from pipeline.store import tables


def run_benchmark(
    variant: Variant,
    games: int,
    seed: int,
    data_dir: Path,
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Any]:
    """Simulate the strategies of ``variant`` and store the rows in benchmarks.parquet.

    Replaces earlier simulation rows of the same variant and strategy; keeps every other row.
    """
    tables.ensure_writable(data_dir)  # before minutes of simulation, not after
    game = variant.make()
    s = Solved(variant, game, game.graph())
    sims, rows = game.simulate(s, games, seed, names, progress)
    with tables.data_lock(data_dir):
        rules = {variant.name: game.rules()}
        tables.replace_rows(data_dir, "benchmarks", {variant.name: rows}, rules)
    return sims
