"""Where a big box's build goes: its solve, its rows, their encoding, the build (issue 49).

A box built without a graph (``build --tiles 24 --dice 3 --objective score``) solves layer by
layer and writes each layer's rows as it goes: 16.8 million states and 268 million policy
rows. Each stage runs in a process of its own, one numba thread (``NUMBA_NUM_THREADS=1``: the
one-core solve the target names) and, where rows are encoded, one writer thread
(``STB_WRITE_THREADS=1``), so that CPU seconds add up:

- ``solve``: the project's streamed solve alone, values only (the baseline of the target);
- ``rows``: the same solve handing over every batch of rows the build writes (states and
  policy), each dropped: the solve plus making the rows;
- ``encode``: the same batches encoded into the build's Parquet files by its writer
  (:func:`pipeline.store.stream_writer.write_streamed_many`, into a temporary folder), no
  commit: the floor of a build that writes these rows;
- ``build``: ``stb-pipeline build`` itself (every writer thread), commit, manifest and catalog.

``encode - rows`` is what encoding the rows costs, ``rows - solve`` what making them costs;
the target (issue 49: the build within 2.5 times the one-core solve) cannot be met where
``encode / solve`` is over it already. CPU seconds, wall seconds and peak memory of each.

    python benchmarks/bench_write_floor.py [--tiles 24 --dice 3] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import baseline  # noqa: E402
from bench_build import run_measured  # noqa: E402

#: The stages' code, each run as ``python -c`` (``{tiles}``, ``{dice}``, ``{out}`` filled in).
STAGES = {
    "solve": (
        "from pipeline.games.shutbox.rules import RuleSet\n"
        "from pipeline.games.shutbox.stream import StreamSolver\n"
        "StreamSolver(RuleSet(tiles={tiles}, dice={dice}, objective='score')).solve()\n"
    ),
    "rows": (
        "from pipeline.games.shutbox.game import ShutTheBox\n"
        "from pipeline.games.shutbox.rules import RuleSet\n"
        "game = ShutTheBox(RuleSet(tiles={tiles}, dice={dice}, objective='score'))\n"
        "for batch in game.stream(('states', 'policy')).batches:\n"
        "    pass\n"
    ),
    "encode": (
        "from pathlib import Path\n"
        "from pipeline.games.shutbox.custom import custom_variant\n"
        "from pipeline.games.shutbox.rules import RuleSet\n"
        "from pipeline.stages.streamed import write_streamed\n"
        "variant = custom_variant(RuleSet(tiles={tiles}, dice={dice}, objective='score'))\n"
        "game = variant.make()\n"
        "write_streamed(variant, game, game.stream(('states', 'policy')), Path({out!r}))\n"
    ),
}


def stage_argv(stage: str, tiles: int, dice: int, out: Path) -> list[str]:
    if stage == "build":
        return [
            sys.executable, "-m", "pipeline", "build", "--tiles", str(tiles), "--dice",
            str(dice), "--objective", "score", "-d", str(out), "--quiet",
        ]  # fmt: skip
    return [sys.executable, "-c", STAGES[stage].format(tiles=tiles, dice=dice, out=str(out))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=24)
    parser.add_argument("--dice", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each, taking turns")
    args = parser.parse_args()
    order = ("solve", "rows", "encode", "build")
    found: dict[str, list[tuple[float, float, float]]] = {s: [] for s in order}
    one = {"NUMBA_NUM_THREADS": "1", "STB_QUIET": "1"}
    with tempfile.TemporaryDirectory(prefix="stb-write-floor-") as tmp:
        run_measured(stage_argv("build", 12, 3, Path(tmp) / "warm"), baseline.env(None, **one))
        for _ in range(args.rounds):
            for stage in order:
                out = Path(tempfile.mkdtemp(dir=tmp))
                env = {**one} if stage == "build" else {**one, "STB_WRITE_THREADS": "1"}
                got = run_measured(
                    stage_argv(stage, args.tiles, args.dice, out),
                    baseline.env(None, **env),
                    cwd=tmp,
                )
                found[stage].append(got)
                print(
                    f"{stage}: wall {got[0]:.1f} s, CPU {got[1]:.1f} s, {got[2]:.0f} MB", flush=True
                )
    table = Table(title=f"build --tiles {args.tiles} --dice {args.dice} --objective score, "
                  f"in stages (median of {args.rounds})")  # fmt: skip
    for col in ("stage", "wall s", "CPU s", "peak MB", "CPU / solve"):
        table.add_column(col, justify="right")
    med = {
        s: [statistics.median(x[k] for x in runs) for k in range(3)] for s, runs in found.items()
    }
    for stage in order:
        wall, cpu, peak = med[stage]
        table.add_row(stage, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:.0f}",
                      f"{cpu / med['solve'][1]:.2f}")  # fmt: skip
    console = Console(width=120)
    console.print(table)
    console.print(
        f"making the rows: {med['rows'][1] - med['solve'][1]:.1f} CPU s; encoding them (one "
        f"writer thread): {med['encode'][1] - med['rows'][1]:.1f} CPU s; the build's own "
        f"rest (commit, hashes, catalog, its threads): {med['build'][1] - med['encode'][1]:.1f} "
        f"CPU s. Target: build CPU <= 2.5 x solve: {med['build'][1] / med['solve'][1]:.2f} "
        f"(floor, encode / solve: {med['encode'][1] / med['solve'][1]:.2f}); "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared machine)"
    )


if __name__ == "__main__":
    main()
