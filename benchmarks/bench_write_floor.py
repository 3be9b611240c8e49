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
- ``build 1``: ``stb-pipeline build`` itself on one numba thread (and every writer thread),
  commit, manifest and catalog;
- ``build``: the same build as a user runs it: every core for the solve and for the writing.

``encode - rows`` is what encoding the rows costs, ``rows - solve`` what making them costs.
The target (issue 49: the build within 2.5 times the one-core solve) is given in CPU seconds
(``build 1`` against ``solve``) and in wall seconds (``build``, every core, against
``solve``); peak memory of each. With ``--base REF`` (default main; ``--no-base`` for none)
the base's ``encode`` and ``build`` run too, taking turns with this checkout's, and the table
gives the bytes per row of the policy each writes.

    python benchmarks/bench_write_floor.py [--tiles 24 --dice 3] [--rounds 1] [--base REF]
"""

from __future__ import annotations

import argparse
import os
import shutil
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
    if stage.startswith("build"):
        return [
            sys.executable, "-m", "pipeline", "build", "--tiles", str(tiles), "--dice",
            str(dice), "--objective", "score", "-d", str(out), "--quiet",
        ]  # fmt: skip
    return [sys.executable, "-c", STAGES[stage].format(tiles=tiles, dice=dice, out=str(out))]


def stage_env(stage: str) -> dict[str, str]:
    """A stage's variables: one numba thread but for ``build``, one writer thread where the
    rows are encoded outside a build."""
    env = {"STB_QUIET": "1"}
    if stage != "build":
        env["NUMBA_NUM_THREADS"] = "1"
    if not stage.startswith("build"):
        env["STB_WRITE_THREADS"] = "1"
    return env


def policy_size(out: Path) -> tuple[int, int]:
    """Bytes and rows of the policy file a stage left in ``out`` ((0, 0) when none)."""
    import pyarrow.parquet as pq

    for p in out.rglob("*policy.parquet*"):
        if p.is_file():
            return p.stat().st_size, pq.ParquetFile(p).metadata.num_rows
    return 0, 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=24)
    parser.add_argument("--dice", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each, taking turns")
    baseline.add_options(parser)
    args = parser.parse_args()
    base = baseline.checkout(args)
    order = ["solve", "rows", "encode", "build 1", "build"]
    runs = [(stage, None) for stage in order]
    if base is not None:  # the base's writing beside this checkout's, taking turns
        runs = [r for stage in order for r in [(stage, None), (stage, base)]
                if r[1] is None or stage not in ("solve", "rows")]  # fmt: skip
    found: dict[tuple[str, Path | None], list[tuple[float, float, float]]] = {r: [] for r in runs}
    sizes: dict[tuple[str, Path | None], tuple[int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="stb-write-floor-") as tmp:
        for repo in {None, base}:
            warm = Path(tempfile.mkdtemp(dir=tmp))
            run_measured(stage_argv("build", 12, 3, warm), baseline.env(repo, **stage_env("build")))
        for _ in range(args.rounds):
            for stage, repo in runs:
                out = Path(tempfile.mkdtemp(dir=tmp))
                got = run_measured(
                    stage_argv(stage, args.tiles, args.dice, out),
                    baseline.env(repo, **stage_env(stage)),
                    cwd=tmp,
                )
                found[stage, repo].append(got)
                sizes[stage, repo] = policy_size(out)
                shutil.rmtree(out)
                who = "" if repo is None else f" ({baseline.label(repo)})"
                print(
                    f"{stage}{who}: wall {got[0]:.1f} s, CPU {got[1]:.1f} s, {got[2]:.0f} MB",
                    flush=True,
                )
    title = (f"build --tiles {args.tiles} --dice {args.dice} --objective score, in stages "
             f"(median of {args.rounds})")  # fmt: skip
    table = Table(title=title)
    for col in ("stage", "wall s", "CPU s", "peak MB", "CPU / solve CPU", "wall / solve wall",
                "policy B/row"):  # fmt: skip
        table.add_column(col, justify="right")
    med = {r: [statistics.median(x[k] for x in got) for k in range(3)] for r, got in found.items()}
    solve_wall, solve_cpu = med["solve", None][:2]
    for stage, repo in runs:
        wall, cpu, peak = med[stage, repo]
        name = stage if repo is None else f"{stage} ({baseline.label(repo)})"
        size_bytes, size_rows = sizes[stage, repo]
        size = f"{size_bytes / size_rows:.2f}" if size_rows else ""
        table.add_row(name, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:.0f}", f"{cpu / solve_cpu:.2f}",
                      f"{wall / solve_wall:.2f}", size)  # fmt: skip
    console = Console(width=140)
    console.print(table)
    console.print(
        f"making the rows: {med['rows', None][1] - solve_cpu:.1f} CPU s; encoding them (one "
        f"writer thread): {med['encode', None][1] - med['rows', None][1]:.1f} CPU s. Target "
        f"(build <= 2.5 x the one-core solve): CPU {med['build 1', None][1] / solve_cpu:.2f}, "
        f"wall on every core {med['build', None][0] / solve_wall:.2f}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} (shared machine)"
    )


if __name__ == "__main__":
    main()
