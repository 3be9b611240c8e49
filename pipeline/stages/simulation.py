"""`stb-pipeline benchmark`: a game's Monte Carlo strategy benchmark, stored in
benchmarks.parquet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline import progress as jobs
from pipeline.games.registry import Variant
from pipeline.games.solved import Solved
from pipeline.store import tables


def run_benchmark(
    variant: Variant,
    games: int,
    seed: int,
    data_dir: Path,
    names: Sequence[str] | None = None,
) -> list[Any]:
    """Simulate the strategies of ``variant`` and store the rows in benchmarks.parquet.

    Replaces earlier simulation rows of the same variant and strategy; keeps every other row.
    The run reports its progress (:mod:`pipeline.progress`), one step per strategy.
    """
    tables.ensure_writable(data_dir)  # before minutes of simulation, not after
    with jobs.task(f"{variant.name}: benchmark", unit="strategies") as job:
        game = variant.make()
        s = Solved(variant, game, game.graph())

        def playing(name: str) -> None:
            # called as each strategy starts: the one before it is done
            job.update(job.done + (1 if job.note else 0), note=f"{games:,} games of {name}")

        sims, rows = game.simulate(s, games, seed, names, playing)
        job.update(len(sims), total=len(sims), note="writing benchmarks.parquet")
        with tables.data_lock(data_dir):
            rules = {variant.name: game.rules()}
            tables.replace_rows(data_dir, "benchmarks", {variant.name: rows}, rules)
    return sims
