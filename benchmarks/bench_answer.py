"""One answer behind every face (issue 30): the in-process answer for a position with a roll,
the first answer of a variant, `play`'s first prompt and its refusal of a bad seat; beside the
old paths of another checkout (the baseline, in the same run).

Targets (this machine): an answer with a roll in a median <= 0.2 ms for every family
(Knucklebones search aside), the first answer of a variant <= 0.5 s, `play --variant four-player`
first prompt <= 1 s, a bad ``--seat`` refused in <= 0.3 s.

Each (checkout, family) runs in a process of its own (``--worker``), so the first answer is a
fresh process's and the peak memory (ru_maxrss, from wait4) is that family's alone. Positions
are drawn once, seeded (``--seed``), from each variant's states table, each with a roll drawn
among its possible ones (Knucklebones: a die), and every checkout answers the same ones.

* ``new``: this checkout's library call (:meth:`pipeline.answer.answers.Answers.position`, or
  ``.board``), and its server path (``Positions.position``: the parameters parsed, then the
  same call, JSON built).
* ``old``: the baseline checkout's server path (``Positions.position`` of its
  ``apps/server/positions.py``: DuckDB per lookup, value arrays for the big variants) and,
  where it had one, its library call (``analysis.answers.best_move``: DuckDB per lookup).

The commands run as whole processes, interleaved old/new so that a noisy machine slows both:
`play --variant four-player` answering ``q`` at its first prompt, and ``--seat 5``.

**The full game's lean tables** (``--lean``, no data directory needed): `knucklebones solve` on
the full game's tables must give one exact answer in <= 0.5 s (issue 31) by reading a handful
of row groups, never the 4.8 billion rows. No GPU built them here, so the run writes both
objectives' ``states`` files in their layout (:func:`lean_files`): the full game's rules and
ids, row groups of 1,048,576 ids with their statistics, the groups that seeded positions and
their successors need filled (``--lean-groups`` full groups in all, a few dozen) among
one-row groups up to the full game's 4,590 (``--footer-groups``: the footer a reader parses
is the real one's size), the values made up from the id (the speed of a lookup does not
depend on them). Each checkout answers the positions in a fresh process: the cold first
answer (footers, row groups), then the warm ones; and `knucklebones solve` runs as a whole
command. Both must give the same columns and values.

Usage: python benchmarks/bench_answer.py --data-dir DIR --base /tmp/answer-base
       [--positions 300] [--rounds 5] [--seed 0]
       python benchmarks/bench_answer.py --lean --base /tmp/answer-base [--lean-groups 24]
       [--footer-groups 4590] [--positions 20] [--rounds 5] [--seed 0]
The data directory needs classic, two-player, double-shutter, knucklebones-2x2 (`build
--variant all`), four-player, two-player-stake (`build --variant four-player,two-player-stake`)
and a 16-tile box (`build --tiles 16 --objective score`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typing import Any

import baseline  # benchmarks/baseline.py: the version run beside
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: The families measured (the 16-tile box is found by its name in the data directory).
FAMILIES = (
    "classic", "two-player", "four-player", "two-player-stake", "double-shutter",
    "stb-16t-2d6-score", "knucklebones-2x2",
)  # fmt: skip


# -- the worker: one checkout, one family ----------------------------------------------------


def worker(data: Path, name: str, asked: list[dict[str, Any]]) -> dict[str, Any]:
    """Time this checkout's answers to ``asked`` (first answer, then each again)."""
    import pipeline.apps.server.positions as server

    out: dict[str, Any] = {}
    board = name.startswith("knucklebones")
    t0 = time.perf_counter()
    positions = server.Positions(data)
    first = positions.position(name, asked[0]["params"])
    out["server_first_s"] = time.perf_counter() - t0
    out["server_ms"] = _times(lambda q: positions.position(name, q["params"]), asked)
    out["answer"] = _summary(first)
    library = _library(data, name, board)
    if library is not None:
        fresh, call = library
        t0 = time.perf_counter()
        fresh(asked[0])
        out["library_first_s"] = time.perf_counter() - t0
        out["library_ms"] = _times(call, asked)
    return out


def _library(data: Path, name: str, board: bool) -> Any:
    """(first call, call) of this checkout's library answer, or None where it had none."""
    from pipeline.games.registry import select_one
    from pipeline.store.manifest import built_variants

    variant = select_one(name, None, built_variants(data))
    try:
        from pipeline.answer.answers import Answers
    except ImportError:  # the old checkout: analysis.answers for the tile games
        if board:
            return None
        from pipeline.analysis import answers as old

        def call_old(q: dict[str, Any]) -> Any:
            return old.best_move(data, variant, q["tiles"], q["roll"], **q["extra"])

        return call_old, call_old
    answers = Answers(data)

    def call(q: dict[str, Any]) -> Any:
        if board:
            return answers.board(variant, q["board"], q["die"])
        return answers.position(variant, state_id=q["id"], roll=q["roll"])

    return call, call


def _times(call: Any, asked: list[dict[str, Any]]) -> list[float]:
    out = []
    for q in asked:
        t0 = time.perf_counter()
        call(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _summary(found: dict[str, Any]) -> Any:
    """What both checkouts must agree on: the roll's moves and values (or the columns; the old
    server ranked equal columns by number, the tie rule by label)."""
    if "columns" in found:
        return sorted((c["column"], round(c["value"], 9)) for c in found["columns"])
    return [(m["move"], round(m["value"], 9)) for m in found.get("moves", [])]


# -- the parent: positions, processes, the table -----------------------------------------------


def draw(data: Path, name: str, n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` positions of ``name`` with a roll (a die), as both checkouts take them."""
    from pipeline.answer.answers import Answers
    from pipeline.games.registry import select_one
    from pipeline.store.manifest import built_variants

    answers = Answers(data)
    variant = select_one(name, None, built_variants(data))
    ids = answers.arrays(variant)["state_id"].tolist()
    out: list[dict[str, Any]] = []
    while len(out) < n:
        state_id = ids[rng.randrange(len(ids))]
        if name.startswith("knucklebones"):
            found = answers.board(variant, _board_text(data, name, state_id))
            if found.over:
                continue
            die = rng.randrange(1, 7)
            params = {"board": found.board, "die": str(die)}
            out.append({"board": found.board, "die": die, "params": params})
            continue
        found_state = answers.position(variant, state_id=state_id)
        if not found_state.rolls:
            continue
        roll = rng.choice(found_state.rolls).roll
        extra = {k: v for k, v in found_state.state.fields.items() if v is not None}
        if extra.get("player") == 1:
            extra = {}
        out.append(
            {
                "id": state_id,
                "tiles": found_state.state.tiles,
                "extra": extra,
                "roll": roll,
                "params": {"id": str(state_id), "roll": str(roll)},
            }
        )
    return out


def _board_text(data: Path, name: str, state_id: int) -> str:
    """A Knucklebones state's board, as its states table writes it."""
    import duckdb

    from pipeline.store.layout import variant_file

    with duckdb.connect() as con:
        found = con.execute(
            "select tiles from read_parquet($p) where variant = $v and state_id = $s",
            {"p": str(variant_file(data, "states", name)), "v": name, "s": state_id},
        ).fetchone()
    assert found is not None
    return str(found[0])


def drawn(data: Path, name: str, n: int, seed: str) -> list[dict[str, Any]]:
    """:func:`draw` in a process of its own, with this checkout's library (the parent stays
    small: on Linux a child's peak memory starts from its parent's at the fork)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "STB_QUIET": "1"}
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_answer.py"), "--data-dir", str(data), "--draw", name,
         str(n), seed],
        env=env, capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def run_worker(tree: Path, data: Path, name: str, asked: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the worker of ``tree`` on ``name`` in a fresh process: its timings and its peak
    memory (MB, from wait4)."""
    request = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-answer-{os.getpid()}.json"
    request.write_text(json.dumps({"data": str(data), "name": name, "asked": asked}))
    env = {**os.environ, "PYTHONPATH": str(tree), "STB_QUIET": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "bench_answer.py"), "--worker", str(request)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tree,
    )  # fmt: skip
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    request.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SystemExit(f"the worker of {tree} on {name} failed (exit {proc.returncode})")
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    found["peak_mb"] = usage.ru_maxrss / 1024
    return found


def command(tree: Path, argv: list[str], stdin: str = "") -> tuple[float, float, int]:
    """(wall seconds, peak MB, exit code) of ``stb-pipeline ARGV`` run from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "STB_QUIET": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *argv], env=env, cwd=tree,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(stdin.encode())
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p99(xs: list[float]) -> float:
    return sorted(xs)[int(0.99 * (len(xs) - 1))] if xs else float("nan")


# -- the full game's lean tables ---------------------------------------------------------------

#: Ids a row group of the full game's lean tables holds (``build --device cuda``).
LEAN_GROUP = 1 << 20


def lean_positions(n: int, seed: int) -> list[tuple[str, str, int]]:
    """``n`` full-game positions reached by seeded random play (not over), each with a die:
    (BOARD1, BOARD2, DIE) as `knucklebones solve` takes them."""
    from pipeline.games.registry import get_variant

    make = get_variant("knucklebones").board
    assert make is not None
    rules = make()
    rng = random.Random(seed)
    out: list[tuple[str, str, int]] = []
    while len(out) < n:
        here = rules.start()
        for _ in range(rng.randrange(0, 17)):
            after = rules.successors(here, rng.randrange(1, 7))
            nxt = after[rng.randrange(len(after))][1]
            if rules.over(nxt):
                break
            here = nxt
        mover, opponent = rules.text(here).split(";")
        out.append((mover, opponent, rng.randrange(1, 7)))
    return out


def lean_files(data: Path, asked: list[tuple[str, str, int]], groups: int, footer: int) -> int:
    """Both objectives' lean ``states`` files of the full game under ``data``, holding every
    id the ``asked`` positions and their successors need (see the module docstring); the
    number of full row groups written."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.games.knucklebones.game import KnuckleRules
    from pipeline.games.registry import get_variant

    make = get_variant("knucklebones").board
    assert make is not None
    rules = make()
    ids = set()
    for mover, opponent, die in asked:
        here = rules.boards(mover, opponent)
        ids.add(rules.state_id(here))
        ids.update(rules.state_id(p) for _, p in rules.successors(here, die))
    full = {i // LEAN_GROUP for i in ids}
    last = rules.game.n_states // LEAN_GROUP
    rng = random.Random(len(ids))
    while len(full) < groups:
        full.add(rng.randrange(last))
    thin = set(rng.sample(range(last), min(last, footer)))
    chosen = sorted(full | set(list(thin - full)[: max(0, footer - len(full))]))
    for name, objective in (("knucklebones", "wins"), ("knucklebones-score", "score")):
        recorded = {name: KnuckleRules(3, 3, 6, objective).to_dict()}
        schema = pa.schema(
            [("variant", pa.string()), ("state_id", pa.int64()), ("objective", pa.string()),
             ("maximise", pa.bool_()), ("value", pa.float64()), ("residual", pa.float64())],
            metadata={"stb.rules": json.dumps(recorded)},
        )  # fmt: skip
        own = data / "variants" / name
        own.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(own / "states.parquet", schema) as writer:
            for g in chosen:
                low = g * LEAN_GROUP
                n = min(LEAN_GROUP, rules.game.n_states - low) if g in full else 1
                sid = np.arange(low, low + n, dtype=np.int64)
                frac = (sid * 0.6180339887498949) % 1.0
                value = frac if objective == "wins" else 40.0 * (frac - 0.5)
                writer.write_table(
                    pa.table(
                        [pa.array([name] * n), sid, pa.array([objective] * n),
                         pa.array([True] * n), value, np.full(n, 1e-7)],
                        schema=schema,
                    ),
                    row_group_size=LEAN_GROUP,
                )  # fmt: skip
    return len(full)


def lean_worker(data: Path, asked: list[list[Any]], rounds: int) -> dict[str, Any]:
    """Time this checkout's exact answers for the full game's positions ``asked``: the first
    (cold: the files opened, their row groups read) and the others, ``rounds`` times each."""
    import pipeline.apps.knucklebones.position as position

    def answer(q: list[Any]) -> Any:
        if hasattr(position, "solve"):  # the one answer
            found = position.solve(q[0], q[1], int(q[2]), variant="knucklebones", data_dir=data)
            assert found.exact, "not answered from the tables"
            return sorted((c.column, c.win, c.diff) for c in found.columns), found.tables
        found = position.analyse(q[0], q[1], int(q[2]), 4, None, data)  # main before it
        assert found.tables, "not answered from the tables"
        cols = sorted((c.column, c.value.win, c.value.diff) for c in found.columns)
        return cols, found.tables

    values, cold_rest, warm = [], [], []
    for k, q in enumerate(asked):
        t0 = time.perf_counter()
        values.append(answer(q))  # its row groups read (the first: the files opened too)
        took = time.perf_counter() - t0
        if k == 0:
            cold = took
        else:
            cold_rest.append(took * 1000)
        for _ in range(rounds):  # asked again: its row groups held
            t0 = time.perf_counter()
            answer(q)
            warm.append((time.perf_counter() - t0) * 1000)
    return {"cold_s": cold, "first_ms": cold_rest, "warm_ms": warm, "values": values}


def lean_main(args: argparse.Namespace) -> None:
    """The ``--lean`` benchmark: the table of both checkouts (see the module docstring)."""
    import tempfile

    base = baseline.resolve(args.base)
    console = Console(width=200)
    asked = lean_positions(args.positions, args.seed)
    data = Path(tempfile.mkdtemp(prefix="bench-lean-")) / "data"
    t0 = time.perf_counter()
    full = lean_files(data, asked, args.lean_groups, args.footer_groups)
    size = sum(f.stat().st_size for f in data.rglob("*.parquet")) / 1e6
    console.print(
        f"lean tables of the full game: {full} full row groups of {LEAN_GROUP:,} ids among "
        f"{args.footer_groups:,} per objective, {size:,.0f} MB, written in "
        f"{time.perf_counter() - t0:.1f} s; {len(asked)} positions, seed {args.seed}"
    )
    table = Table(title="an exact answer from the full game's lean tables (in-process)")
    for col in ("checkout", "cold first s", "each position's first ms (median)",
                "warm median ms", "warm p99 ms", "peak MB"):  # fmt: skip
        table.add_column(col, justify="left" if col == "checkout" else "right")
    found: dict[str, Any] = {}
    for which, tree in (("new", REPO), ("old", base)):
        request = Path(tempfile.mkstemp(suffix=".json")[1])
        request.write_text(json.dumps({"data": str(data), "asked": asked, "rounds": args.rounds}))
        env = {**os.environ, "PYTHONPATH": str(tree), "STB_QUIET": "1"}
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "bench_answer.py"), "--lean-worker", str(request)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree,
        )  # fmt: skip
        out, err = proc.communicate()
        request.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise SystemExit(f"the {which} checkout failed: {err.strip().splitlines()[-1:]}")
        found[which] = json.loads(out.strip().splitlines()[-1])
        found[which]["peak_mb"] = json.loads(out.strip().splitlines()[-2])["peak_mb"]
        r = found[which]
        table.add_row(
            which, f"{r['cold_s']:.3f}", f"{med(r['first_ms']):.1f}", f"{med(r['warm_ms']):.3f}",
            f"{p99(r['warm_ms']):.3f}", f"{r['peak_mb']:.0f}",
        )  # fmt: skip
    console.print(table)
    same = all(
        all(abs(a[1] - b[1]) <= 1e-12 and abs(a[2] - b[2]) <= 1e-12 and a[0] == b[0]
            for a, b in zip(n[0], o[0], strict=True))
        for n, o in zip(found["new"]["values"], found["old"]["values"], strict=True)
    )  # fmt: skip
    console.print(f"the checkouts give the same columns and values: {'yes' if same else 'NO'}")
    cmd = Table(title=f"knucklebones solve, a whole command, median of {args.rounds} (interleaved)")
    for col in ("checkout", "s", "peak MB", "target s"):
        cmd.add_column(col, justify="left" if col == "checkout" else "right")
    argv = ["knucklebones", "solve", *map(str, asked[0]), "-d", str(data)]
    runs: dict[str, list[tuple[float, float, int]]] = {"new": [], "old": []}
    for _ in range(args.rounds):
        for which, tree in (("new", REPO), ("old", base)):
            runs[which].append(command(tree, argv))
    for which in ("new", "old"):
        assert all(r[2] == 0 for r in runs[which]), f"{which}: knucklebones solve failed"
        cmd.add_row(
            which, f"{med([r[0] for r in runs[which]]):.2f}",
            f"{max(r[1] for r in runs[which]):.0f}", "<= 0.5" if which == "new" else "",
        )  # fmt: skip
    console.print(cmd)
    console.print(
        "cold first = a fresh process's first answer (the files' footers parsed, its row groups "
        "read); each position's first = the next positions' first answers (their own row "
        f"groups read); warm = each answered again at once ({args.rounds} times). "
        f"Machine load at the end: {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=False)
    parser.add_argument(
        "--base",
        help="the old version: a git ref or a checkout's directory (benchmarks/baseline.py)",
    )
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lean", action="store_true", help="the full game's lean tables")
    parser.add_argument("--lean-groups", type=int, default=24)
    parser.add_argument("--footer-groups", type=int, default=4590)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lean-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--draw", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        request = json.loads(args.worker.read_text())
        found = worker(Path(request["data"]), request["name"], request["asked"])
        print(json.dumps(found))
        return
    if args.lean_worker is not None:
        import resource

        request = json.loads(args.lean_worker.read_text())
        found = lean_worker(Path(request["data"]), request["asked"], request["rounds"])
        print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
        print(json.dumps(found))
        return
    if args.lean:
        if args.base is None:
            raise SystemExit("give --base (an old checkout: git archive main | tar -x -C DIR)")
        lean_main(args)
        return
    if args.draw is not None:
        name, n, seed = args.draw
        print(json.dumps(draw(args.data_dir, name, int(n), random.Random(seed))))
        return
    if args.data_dir is None or args.base is None:
        raise SystemExit("give --data-dir and --base (an old checkout: git worktree add ...)")
    data, base = args.data_dir.resolve(), baseline.resolve(args.base)
    console = Console(width=200)
    table = Table(title=f"answers with a roll, {args.positions} positions a family (ms)")
    for col in ("family", "new first s", "new median", "new p99", "new server median",
                "old server first s", "old server median", "old library median",
                "ratio library", "ratio server", "peak MB new", "peak MB old"):  # fmt: skip
        table.add_column(col, justify="left" if col == "family" else "right")
    worst = {"median": 0.0, "first": 0.0}
    for name in FAMILIES:
        asked = drawn(data, name, args.positions, f"{args.seed}-{name}")
        new = run_worker(REPO, data, name, asked)
        old = run_worker(base, data, name, asked)
        if new["answer"] != old["answer"]:
            console.print(f"[red]{name}: the checkouts disagree on the first position[/]")
        new_peak, old_peak = new["peak_mb"], old["peak_mb"]
        lib = new.get("library_ms", [])
        base_ms = old.get("library_ms") or old["server_ms"]
        worst["median"] = max(worst["median"], med(lib))
        worst["first"] = max(worst["first"], new.get("library_first_s", 0.0))
        table.add_row(
            name, f"{new.get('library_first_s', float('nan')):.3f}", f"{med(lib):.3f}",
            f"{p99(lib):.3f}", f"{med(new['server_ms']):.3f}", f"{old['server_first_s']:.3f}",
            f"{med(old['server_ms']):.3f}",
            f"{med(old['library_ms']):.3f}" if "library_ms" in old else "-",
            f"{med(base_ms) / med(lib):.0f}x",
            f"{med(old['server_ms']) / med(new['server_ms']):.0f}x",
            f"{new_peak:.0f}", f"{old_peak:.0f}",
        )  # fmt: skip
    console.print(table)
    console.print(
        f"worst new median {worst['median']:.3f} ms (target <= 0.2), worst first answer "
        f"{worst['first']:.3f} s (target <= 0.5); ratio library = the old library's median (the "
        "old server's for Knucklebones) over the new one's; ratio server = old over new server path"
    )
    plays = Table(title=f"play, whole processes, median of {args.rounds} (interleaved)")
    for col in ("command", "new s", "old s", "ratio", "peak MB new", "peak MB old", "target s"):
        plays.add_column(col, justify="left" if col == "command" else "right")
    cases = [
        ("play --variant four-player, q at the first prompt",
         ["play", "--variant", "four-player", "--seed", "1", "-d", str(data)], "q\n", 1.0),
        ("play --variant four-player --seat 5 (refused)",
         ["play", "--variant", "four-player", "--seat", "5", "-d", str(data)], "", 0.3),
        ("python -c pass (the floor)", None, "", None),
    ]  # fmt: skip
    for label, argv, stdin, target in cases:
        runs: dict[str, list[tuple[float, float, int]]] = {"new": [], "old": []}
        for _ in range(args.rounds):
            for which, tree in (("new", REPO), ("old", base)):
                if argv is None:
                    start = time.perf_counter()
                    subprocess.run([sys.executable, "-c", "pass"], check=True)
                    runs[which].append((time.perf_counter() - start, 0.0, 0))
                else:
                    runs[which].append(command(tree, argv, stdin))
        n, o = (med([r[0] for r in runs[k]]) for k in ("new", "old"))
        pn, po = (max(r[1] for r in runs[k]) for k in ("new", "old"))
        plays.add_row(
            label, f"{n:.2f}", f"{o:.2f}", f"{o / n:.1f}x", f"{pn:.0f}", f"{po:.0f}",
            "" if target is None else f"<= {target}",
        )  # fmt: skip
    console.print(plays)
    console.print(f"seed {args.seed}; machine load at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
