"""The rule family's search (issue 32): its cost per variant, the build with and without it, and
the values it finds.

1. For classic, lever and twelve-tiles, each in a process of its own: the search (every rule of
   up to three keys and every one-die threshold, both objectives) and the two 50-exception
   curves, seconds and peak memory, beside a baseline measured in the same process: the same
   distinct policies priced one at a time by the plain evaluator (`policy_eval.evaluate`, timed
   on a sample and scaled), and the ratio.
2. `stb-pipeline strategies --variant classic,lever,twelve-tiles` from the shell: wall seconds
   and peak memory of the whole command (target: 60 s and 1 GB).
3. `build --variant all` with the strategies stage and without it (the same checkout, the stage
   switched off in the child process), in turns, N runs each: medians and the ratio (target:
   at most 1.2).
4. The values for docs/benchmarks.md: per variant and objective, optimal play, the best named
   strategy, the best rule of at most 1, 2 and 3 keys, and the best rule with 10 and 50
   exceptions.

Usage: python benchmarks/bench_strategy_search.py [--runs N] [--skip-search] [--skip-build]
       [--skip-values]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_build import run_measured  # noqa: E402  (after the path: the scripts run from anywhere)

TIMED = ("classic", "lever", "twelve-tiles")
ALL = (
    "classic",
    "classic-score",
    "lever",
    "one-die-6",
    "one-die-6-max2",
    "six-tiles-one-die",
    "twelve-tiles",
    "digital-score",
)
#: The build without the strategies stage: the same checkout, the stage switched off.
WITHOUT = (
    "import sys; import pipeline.games.shutbox.game as g; "
    "g.ShutTheBox.search_in_build = property(lambda self: False); "
    "from pipeline.cli.app import main; sys.argv = ['stb-pipeline', *sys.argv[1:]]; main()"
)
SAMPLE = 200


def measure(name: str) -> dict[str, float]:
    """One variant's search and curves in this process, and the plain evaluator's baseline."""
    import numpy as np

    from pipeline.games.registry import get_variant
    from pipeline.games.shutbox import rule_exceptions, rule_keys, rule_search
    from pipeline.solve import policy_eval
    from pipeline.solve.rank_order import solve_rank_order

    game = get_variant(name).make()
    g = game.graph()
    start = int(np.flatnonzero(g.state_id == game.start_state())[0])
    view = rule_keys.box_rules(game, g)
    objectives = rule_search.objectives(game, g, solve_rank_order(g), start)
    rule_search.search(view, objectives[:1], max_keys=1)  # numba's cached kernels load first
    t0 = time.perf_counter()
    found = rule_search.search(view, objectives)
    t1 = time.perf_counter()
    for obj in objectives:
        rule, _ = found.best_within(obj.name, 3)
        rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        rule_exceptions.curve(obj, rows, choice)
    t2 = time.perf_counter()
    # baseline: the same distinct policies one at a time through policy_eval.evaluate, on every
    # objective's graph (a sample, scaled to all of them)
    picked = np.linspace(0, found.first.shape[0] - 1, min(SAMPLE, found.first.shape[0]))
    plan = policy_eval.plan(g)
    t3 = time.perf_counter()
    for p in picked.astype(np.int64):
        rule = found.rule(int(found.first[p]))
        rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        for obj in objectives:
            policy_eval.evaluate(obj.graph, policy_eval.deterministic(g, rows, choice), plan)
    naive = (time.perf_counter() - t3) / picked.shape[0] * found.first.shape[0]
    return {
        "states": g.n_states,
        "rules": found.n_rules,
        "policies": int(found.first.shape[0]),
        "search_s": t1 - t0,
        "curves_s": t2 - t1,
        "naive_s": naive,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def in_child(name: str) -> dict[str, float]:
    """:func:`measure` in a fresh process (its own peak memory)."""
    code = (
        f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_strategy_search as b; "
        f"print(json.dumps(b.measure({name!r})))"
    )
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def search_table(console: Console) -> None:
    table = Table(
        title="The search (both objectives) and the two curves, one process per variant",
        title_justify="left",
    )
    heads = ("variant", "states", "rules", "policies", "search s", "curves s", "total s")
    for head in (*heads, "peak MB", "one at a time s", "ratio"):
        table.add_column(head, justify="left" if head == "variant" else "right", no_wrap=True)
    for name in TIMED:
        console.print(f"measuring {name}", style="dim")
        m = in_child(name)
        total = m["search_s"] + m["curves_s"]
        table.add_row(
            name,
            f"{m['states']:,}",
            f"{m['rules']:,}",
            f"{m['policies']:,}",
            f"{m['search_s']:.2f}",
            f"{m['curves_s']:.2f}",
            f"{total:.2f}",
            f"{m['peak_mb']:,.0f}",
            f"{m['naive_s']:.2f}",
            f"{m['naive_s'] / m['search_s']:.1f}x",
        )
    console.print(table)


def command_table(console: Console) -> None:
    """`stb-pipeline strategies` for the three timed variants, from the shell."""
    env = {"PYTHONPATH": str(HERE.parent), "STB_QUIET": "1"}
    python = [sys.executable, "-m", "pipeline"]
    with tempfile.TemporaryDirectory() as tmp:
        variants = ",".join(TIMED)
        run_measured([*python, "build", "--variant", "classic", "-d", f"{tmp}/warm"], env, tmp)
        # strategies searches variants already built (their tables are what queries read)
        run_measured([*python, "build", "--variant", ",".join(TIMED), "-d", f"{tmp}/d"], env, tmp)
        wall, cpu, peak = run_measured(
            [*python, "strategies", "--variant", variants, "-d", f"{tmp}/d"], env, tmp
        )
    table = Table(title="stb-pipeline strategies, whole process", title_justify="left")
    for head in ("command", "wall s", "cpu s", "peak MB", "target"):
        table.add_column(head, justify="left" if head == "command" else "right", no_wrap=True)
    command = f"strategies --variant {variants}"
    table.add_row(command, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:,.0f}", "60 s, 1 GB")
    console.print(table)


def build_table(console: Console, runs: int) -> None:
    """`build --variant all` with and without the stage, in turns; medians and the ratio."""
    env = {"PYTHONPATH": str(HERE.parent), "STB_QUIET": "1"}
    kinds = {
        "with the strategies stage": [sys.executable, "-m", "pipeline"],
        "without it": [sys.executable, "-c", WITHOUT],
    }
    found: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs + 1):  # the first round warms the numba caches: not counted
            for k, (name, argv) in enumerate(kinds.items()):
                data = f"{tmp}/{i}-{k}"  # a fresh directory each time: nothing is skipped
                figures = run_measured([*argv, "build", "--variant", "all", "-d", data], env, tmp)
                if i:
                    found[name].append(figures)
    table = Table(title=f"build --variant all, median of {runs} runs each", title_justify="left")
    for head in ("build", "wall s", "cpu s", "peak MB", "wall ratio", "cpu ratio"):
        table.add_column(head, justify="left" if head == "build" else "right", no_wrap=True)
    medians = {k: [statistics.median(x[j] for x in v) for j in range(3)] for k, v in found.items()}
    base = medians["without it"]
    for name, (wall, cpu, peak) in medians.items():
        ratios = (f"{wall / base[0]:.2f}", f"{cpu / base[1]:.2f}")
        table.add_row(name, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:,.0f}", *ratios)
    console.print(table)


def values_table(console: Console) -> None:
    """Per variant and objective: optimal, best named, best rules, and with exceptions."""
    import numpy as np

    from pipeline.games.registry import get_variant
    from pipeline.games.shutbox import benchmark, rule_exceptions, rule_keys, rule_search
    from pipeline.games.solved import Solved

    table = Table(title="Values from the start (percent for P(shut))", title_justify="left")
    heads = ("variant", "objective", "optimal", "best named", "1 key", "2 keys", "3 keys")
    for head in (*heads, "+10 exceptions", "+50 exceptions", "best rule"):
        table.add_column(head, justify="left" if head in heads[:2] else "right", no_wrap=True)
    for name in ALL:
        variant = get_variant(name)
        game = variant.make()
        s = Solved(variant, game, game.graph())
        g, start = s.graph, benchmark.start_index(s)
        view = rule_keys.box_rules(game, g)
        objectives = rule_search.objectives(game, g, s.solve(), start)
        found = rule_search.search(view, objectives)
        named = benchmark.evaluate_strategies(s)
        for obj in objectives:
            scale, unit = (100.0, "%") if obj.maximise else (1.0, "")

            def show(value: float, scale: float = scale, unit: str = unit) -> str:
                return f"{value * scale:.4f}{unit}"

            worth = {
                "shut": {e.name: e.win_rate for e in named},
                "score": {e.name: e.expected_score for e in named},
            }.get(obj.name, {e.name: float(e.value[start]) for e in named})
            worth.pop("optimal")
            top = max(worth, key=lambda k: obj.better(np.array(worth[k])))
            best = [found.best_within(obj.name, k) for k in (1, 2, 3)]
            rule = best[2][0]
            rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
            curve = rule_exceptions.curve(obj, rows, choice)
            values = [curve.start_value, *(o.value for o in curve.overrides)]
            table.add_row(
                name,
                obj.name,
                show(obj.optimum),
                f"{show(worth[top])} ({top})",
                *(show(v) for _, v in best),
                show(values[min(10, len(values) - 1)]),
                show(values[min(50, len(values) - 1)]),
                rule.spec,
            )
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each build (default 3)")
    parser.add_argument("--skip-search", action="store_true", help="leave out the search timing")
    parser.add_argument("--skip-build", action="store_true", help="leave out the build timing")
    parser.add_argument("--skip-values", action="store_true", help="leave out the values table")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 150))
    if not args.skip_search:
        search_table(console)
        command_table(console)
    if not args.skip_build:
        build_table(console, args.runs)
    if not args.skip_values:
        values_table(console)


if __name__ == "__main__":
    main()
