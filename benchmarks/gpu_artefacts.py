"""Issue 38: everything the full Knucklebones game can tell, from one short call on a lent GPU
machine, as files to keep in the repository.

One call (``run``, about four minutes on an H100; docs/knucklebones-full-game.md) writes no
tables: it solves each objective on the GPU with the bounds kept there, copies to the host only
the values the artefacts need (a gather of given state ids), and makes from them

- the labelled positions (``3x3-d6-labelled.parquet``, compact: float32): the positions of
  games between the project's players plus a uniform sample, drawn beforehand on a CPU and
  committed (``benchmarks/gpu-inputs/3x3-d6-positions.npz``, the ``inputs`` step), each with
  its exact value and every (die, column) choice's, both objectives;
- the opening book (``3x3-d6-book.npz``): every position within the first 7 placements
  (907,311), both objectives;
- a summary (``knucklebones-3x3-d6.json`` and ``.md``): the provenance (GPU, commit, code
  hash, seconds, tolerance), the first player's chance by first die, the second player's best
  first placement for each pair of first dice, the sampled Bellman check of `knucklebones
  check-tables` on the GPU's values, every artefact's contract
  (:mod:`pipeline.games.knucklebones.artefacts`) and, last and only if the budget leaves time,
  greedy play's exact chance against a perfect opponent (its best response, solved on the GPU).

Steps, each a process of its own (a solve's GPU memory is freed when its process ends):
the preflight of ``gpu_session.py`` (the packages and the GPU, the carried numba-cuda and numpy
installed when the image's fail), ``solve`` of ``wins`` (which starts ``prepare`` beside it on
the CPU: the state ids to gather), ``solve`` of ``score``, ``assemble`` (CPU: the files and
their checks), ``greedy``. Logged and budgeted as ``gpu_session.py``'s steps (OUT/artefacts.log,
.md, .json rewritten after every step): a run cut short still says what it did, and what is
left out for time says so. Files back: seven, the largest about 11 MB.

``dry`` is the same call here, before any GPU time: a small board stands in for the full game
(2x2 with a three-sided die; its positions drawn at the start), numba's CUDA simulator for the
GPU, polars, DuckDB and matplotlib refused; every value is compared with the CPU solver's and
greedy's with the plain CPU solve (``just gpu-artefacts-dry``, under a minute).

Usage:
  python benchmarks/gpu_artefacts.py inputs [--games 4000 --uniform 20000 --seed 38]
  python benchmarks/gpu_artefacts.py run --budget 225 --commit SHA --out $OUT   # on the GPU
  python benchmarks/gpu_artefacts.py dry [--board 2x2d3] [--out DIR]           # here
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_session
from gpu_session import ROOT, Session

SCRIPT = Path(__file__).resolve()
#: What a device call brings back: at most 8 files of 16 MiB (a margin kept for the headers).
MAX_FILES = 8
MAX_BYTES = 16 * 2**20 - 64 * 2**10
#: The seconds each step is expected to take on an H100 (the solves measured on 2026-11-26:
#: 45 and 56 s), with room: a step starts only if this much is left, else it says so.
NEED = {"score": 65.0, "assemble": 25.0, "greedy": 30.0}
#: Seconds kept back at the end of the budget for the summary.
MARGIN = 8.0
#: What the steps leave in the work folder for the next.
STEP_FILES = ("wanted.npz", "wins.npz", "wins.json", "score.npz", "score.json", "greedy.json")


@dataclass(frozen=True)
class Plan:
    """The board of a run and what is made of it."""

    columns: int
    rows: int
    faces: int
    inputs: Path
    plies: int  # the book's placements
    samples: int  # the sampled Bellman check (check-tables --samples --seed)
    seed: int
    tolerance: float = 1e-11
    greedy_tolerance: float = 1e-6  # float32 bounds on an 80 GB GPU
    #: Held-out positions whose successors in play are labelled too, so that each of their
    #: choices, best or not, meets its own row (issue 48: no CPU solve checks the full game's
    #: set); about 12 rows each, within the labelled file's room.
    successors_of: int = 3000

    @property
    def board(self) -> str:
        return f"{self.columns}x{self.rows}-d{self.faces}"

    def args(self) -> list[str]:
        return [
            "--board", f"{self.columns}x{self.rows}d{self.faces}", "--inputs", str(self.inputs),
            "--plies", str(self.plies), "--samples", str(self.samples), "--seed", str(self.seed),
            "--tolerance", str(self.tolerance), "--greedy-tolerance", str(self.greedy_tolerance),
            "--successors-of", str(self.successors_of),
        ]  # fmt: skip


INPUTS = ROOT / "benchmarks" / "gpu-inputs" / "3x3-d6-positions.npz"
REAL = Plan(3, 3, 6, INPUTS, plies=7, samples=100, seed=7)
#: The inputs of the full game (``inputs``): games between the project's players, a uniform
#: sample; 106,403 positions (86,403 met in play).
GAMES, UNIFORM, INPUT_SEED = 4000, 20000, 38


def parse_board(text: str) -> tuple[int, int, int]:
    """``3x3d6`` -> (3, 3, 6)."""
    try:
        cr, f = text.lower().split("d")
        c, r = cr.split("x")
        return int(c), int(r), int(f)
    except ValueError:
        raise SystemExit(f"--board {text!r}: write it as 3x3d6 (columns x rows, d faces)") from None


def plan_of(args: argparse.Namespace) -> Plan:
    c, r, f = parse_board(args.board)
    return Plan(c, r, f, Path(args.inputs), args.plies, args.samples, args.seed, args.tolerance,
                args.greedy_tolerance, args.successors_of)  # fmt: skip


# -- the steps in their own processes (they import the pipeline; the parent does not) --------


def inputs_step(args: argparse.Namespace) -> int:
    """The positions to label, drawn on the CPU (deterministic for a seed): state ids, sources
    (0 play, 1 uniform), plies, and the record of how they were drawn."""
    import numpy as np

    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.knucklebones.players.positions import positions
    from pipeline.store.manifest import code_hash

    c, r, f = parse_board(args.board)
    game = Knucklebones(KnuckleRules(c, r, f))
    t0 = time.perf_counter()
    state_id, source, ply, meta = positions(game, args.games, args.uniform, args.seed)
    meta.update(board=f"{c}x{r}-d{f}", columns=c, rows=r, faces=f, code_hash=code_hash())
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez_compressed(
            fh, state_id=state_id, source=(source == "uniform").astype(np.uint8),
            ply=ply.astype(np.int16), meta=np.array(json.dumps(meta, sort_keys=True)),
        )  # fmt: skip
    os.replace(tmp, out)
    print(f"{len(state_id):,} positions ({int((source == 'play').sum()):,} met in play) written "
          f"to {out} in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    return 0


def read_inputs(path: Path) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(state ids, sources as text, plies, record) of an inputs file."""
    import numpy as np

    with np.load(path, allow_pickle=False) as found:
        source = np.where(found["source"] == 1, "uniform", "play")
        return found["state_id"], source, found["ply"], json.loads(str(found["meta"]))


def prepare_step(args: argparse.Namespace) -> int:
    """Every state id whose value the artefacts need, in ``WORK/wanted.npz``: the labelled
    positions and every choice's successor, the book's positions, the sampled check's positions
    and their successors."""
    import numpy as np

    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.knucklebones.players import book, positions

    plan = plan_of(args)
    t0 = time.perf_counter()
    game = Knucklebones(KnuckleRules(plan.columns, plan.rows, plan.faces))
    state_id, source, ply, meta = read_inputs(plan.inputs)
    if (meta["columns"], meta["rows"], meta["faces"]) != (plan.columns, plan.rows, plan.faces):
        print(f"{plan.inputs} holds positions of the {meta['board']} board, not {plan.board}")
        return 2
    state_id = positions.with_successors(game, state_id, source, ply, plan.successors_of)[0]
    nxt = successor_ids(game.r, state_id)
    booked = book.reachable(game, plan.plies)
    sample = sample_ids(game.n_states, plan.samples, plan.seed)
    live = ~game.terminal_mask(pairs_of(game.r, sample))
    succ = successor_ids(game.r, sample[live])
    wanted = np.unique(np.concatenate([state_id, nxt[nxt >= 0], booked, sample, succ[succ >= 0]]))
    work = Path(args.work)
    save_npz(work / "wanted.npz", ids=wanted, book=booked, sample=sample)
    print(f"prepare: {len(wanted):,} state ids to gather ({len(state_id):,} labelled positions, "
          f"{len(booked):,} in the book, {len(sample)} sampled), "
          f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
    return 0


def sample_ids(n_states: int, samples: int, seed: int) -> Any:
    """The positions `knucklebones check-tables --samples --seed` checks: drawn uniformly."""
    import numpy as np

    return np.unique(np.random.default_rng(seed).integers(0, n_states, size=samples))


def save_npz(path: Path, **arrays: Any) -> None:
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def device_record() -> dict[str, Any]:
    """The GPU (or the simulator) and the versions that ran on it."""
    import numba
    import numpy as np

    from pipeline.games.knucklebones.exact import gpu

    cuda = gpu.cuda_module()
    dev = cuda.get_current_device()
    name = getattr(dev, "name", b"the CUDA simulator")
    name = name.decode() if isinstance(name, bytes) else str(name)
    try:
        import numba_cuda

        numba_cuda_version = getattr(numba_cuda, "__version__", "?")
    except ImportError:
        numba_cuda_version = "?"
    return {
        "device": name, "simulated": gpu.simulated(),
        "compute_capability": list(getattr(dev, "compute_capability", ()) or ()),
        "numba": numba.__version__, "numba_cuda": numba_cuda_version, "numpy": np.__version__,
    }  # fmt: skip


def solve_step(args: argparse.Namespace) -> int:
    """Solve one objective on the GPU, keep the bounds there, gather the wanted values."""
    import numpy as np

    from pipeline.games.knucklebones.exact import solver
    from pipeline.games.knucklebones.game import KnuckleRules

    plan = plan_of(args)
    work = Path(args.work)
    prep = None
    if args.prepare:  # the state ids are drawn on the CPU while the GPU solves
        prep = subprocess.Popen(
            [sys.executable, str(SCRIPT), "prepare", "--work", str(work), *plan.args()]
        )
    rules = KnuckleRules(plan.columns, plan.rows, plan.faces, args.objective)

    def progress(sweep: int, change: float, bound: float, rate: float) -> None:
        print(f"sweep {sweep}: change {change:.3g}, bound {bound:.3g}, {rate:,.0f} pos/s",
              flush=True)  # fmt: skip

    t0 = time.perf_counter()
    sol = solver.solve(rules, "cuda", tol=plan.tolerance, progress=progress)
    if prep is not None and prep.wait() != 0:
        print(f"prepare failed (exit {prep.returncode})")
        return 1
    with np.load(work / "wanted.npz") as found:
        wanted = found["ids"]
    t1 = time.perf_counter()
    values = sol.at(wanted)
    gathered = time.perf_counter() - t1
    save_npz(work / f"{args.objective}.npz", ids=wanted, values=values)
    record = {
        "objective": args.objective, "start": sol.value_of(0), "bound": sol.bound,
        "residual": sol.residual, "sweeps": sol.sweeps, "solve_seconds": sol.seconds,
        "sweep_seconds": sol.sweep_seconds, "dtype": np.dtype(sol.dtype).name,
        "tolerance": plan.tolerance, "gathered": len(wanted),
        "gather_seconds": gathered, "seconds": time.perf_counter() - t0, **device_record(),
    }  # fmt: skip
    (work / f"{args.objective}.json").write_text(json.dumps(record, indent=1))
    print(
        f"{args.objective}: start value {sol.value_of(0):.15g}, {sol.sweeps} sweeps, every "
        f"value within {sol.bound:.3g}; {len(wanted):,} values gathered in {gathered:.2f} s"
    )
    return 0


def greedy_step(args: argparse.Namespace) -> int:
    """Greedy against its best response on the GPU (wins), stopped after ``--seconds``;
    with ``--reference``, beside the plain CPU solve."""
    from pipeline.games.knucklebones.exact import gpu
    from pipeline.games.knucklebones.game import KnuckleRules

    plan = plan_of(args)
    rules = KnuckleRules(plan.columns, plan.rows, plan.faces, "wins")

    def progress(sweep: int, change: float, bound: float, rate: float) -> None:
        print(f"greedy sweep {sweep}: change {change:.3g}, bound {bound:.3g}, {rate:,.0f} pos/s",
              flush=True)  # fmt: skip

    found = gpu.greedy_solve(rules, tol=plan.greedy_tolerance, seconds=args.seconds,
                             progress=progress)  # fmt: skip
    record = found.record()
    record.update(device_record())
    if args.reference:
        sys.path.insert(0, str(ROOT))  # the plain CPU solve is the tests' (tests/support)
        from tests.support.knucklebones_greedy import solve_cpu

        cpu = solve_cpu(rules)
        worst = max(
            abs(cpu.greedy_first[0] - sum(found.greedy_first) / 2),
            abs(cpu.greedy_second[0] - sum(found.greedy_second) / 2),
        )
        record["reference"] = {
            "greedy_first": cpu.greedy_first[0],
            "greedy_second": cpu.greedy_second[0],
            "max_diff": worst,
        }
    (Path(args.work) / "greedy.json").write_text(json.dumps(record, indent=1))
    lo, hi = found.greedy_first
    print(
        f"greedy moving first wins {lo:.8f}..{hi:.8f} against its best response "
        f"({found.sweeps} sweeps, {'converged' if found.converged else 'cut by the budget'})"
    )
    return 0


def assemble_step(args: argparse.Namespace) -> int:
    """The artefacts and the summary from the gathered values (CPU); exit 1 when a check
    fails."""
    import numpy as np

    from pipeline.analysis import knucklebones_artefacts as contract
    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.knucklebones.players import artefacts, book, labels, positions
    from pipeline.store.files import write_file_atomic
    from pipeline.store.manifest import code_hash

    plan = plan_of(args)
    work, out = Path(args.work), Path(args.out)
    t0 = time.perf_counter()
    game = Knucklebones(KnuckleRules(plan.columns, plan.rows, plan.faces))
    solves = {o: json.loads((work / f"{o}.json").read_text())
              for o in ("wins", "score") if (work / f"{o}.json").exists()}  # fmt: skip
    if "wins" not in solves:
        print("no wins solve to assemble from")
        return 1
    values: dict[str, Any] = {}
    for objective in solves:
        with np.load(work / f"{objective}.npz") as found:
            values[objective] = (found["ids"], found["values"])

    def lookup(objective: str) -> labels.Lookup:
        ids, vals = values[objective]

        def read(asked: np.ndarray) -> np.ndarray:
            at = np.minimum(np.searchsorted(ids, asked), len(ids) - 1)
            if not (ids[at] == asked).all():
                raise KeyError(f"{objective}: state ids not gathered")
            return vals[at]

        return read

    lookups = {o: lookup(o) for o in solves}
    first = solves["wins"]
    provenance = {
        "device": first["device"], "simulated": first["simulated"],
        "commit": args.commit or git_commit(), "code_hash": code_hash(),
        "tolerance": plan.tolerance,
        "seconds": {o: round(s["solve_seconds"], 1) for o, s in solves.items()},
        "numba_cuda": first["numba_cuda"], "numpy": first["numpy"],
        "made": time.strftime("%Y-%m-%d", time.gmtime()),
        "values": f"GPU solve, float64 bounds, every value within {plan.tolerance:g}"
        if first["dtype"] == "float64" else f"GPU solve, {first['dtype']} bounds",
    }  # fmt: skip
    summary: dict[str, Any] = {
        "board": plan.board, "dry": bool(first["simulated"]), "provenance": provenance,
        "solves": solves, "checks": [],
    }  # fmt: skip
    checks: list[tuple[str, bool]] = summary["checks"]

    # the labelled set, the successors of its first held-out positions first (each of their
    # choices meets its own row; the cut to fit takes the uniform sample's, last, first)
    state_id, source, ply, meta = read_inputs(plan.inputs)
    state_id, source, ply, roots = positions.with_successors(
        game, state_id, source, ply, plan.successors_of
    )
    drawn_by = meta.pop("code_hash", None)  # the code that drew the positions, kept apart
    meta = {**meta, **provenance, "inputs": plan.inputs.name, "inputs_code_hash": drawn_by,
            "successors_of": roots}  # fmt: skip
    labelled = labels.label(game, state_id, source, ply, lookups, meta)
    name = f"{plan.board}-labelled.parquet"
    kept = write_labelled(labelled, out / name)
    labelled_back = artefacts.read_labelled(out / name)
    summary["labelled"] = {
        "file": name, "bytes": (out / name).stat().st_size, "positions": len(labelled_back),
        "play": int((labelled_back.source == "play").sum()),
        "uniform": int((labelled_back.source == "uniform").sum()),
        "cut to fit": len(labelled) - kept, "objectives": sorted(labelled_back.values),
    }  # fmt: skip
    findings = contract.check_labelled(labelled_back, name)

    # the book (both objectives), the first dice, the replies
    if "score" in solves:
        start = {"win": solves["wins"]["start"], "diff": solves["score"]["start"]}
        plies, bname = plan.plies, f"{plan.board}-book.npz"
        while True:
            made = book.make(game, lookups, plies, {**provenance, "start": start})
            write_file_atomic(out / bname, artefacts.book_writer(made, compact=True))
            if (out / bname).stat().st_size <= MAX_BYTES or plies <= 1:
                break
            plies -= 1  # too big to come back: one placement fewer
        back = artefacts.read_book(out / bname)
        summary["book"] = {"file": bname, "bytes": (out / bname).stat().st_size,
                           "plies": back.plies, "positions": len(back)}  # fmt: skip
        findings += contract.check_book(back, bname)
        summary["first_die"] = contract.first_die(back)
        summary["replies"] = contract.replies(back) if back.plies >= 2 else []
    else:
        checks.append(("the book: no score solve (the budget): not written", False))

    # the sampled Bellman check of check-tables, on the GPU's float64 values
    with np.load(work / "wanted.npz") as found:
        sample = found["sample"]
    pos = pairs_of(game.r, sample)
    over = game.terminal_mask(pos)
    succ = successor_ids(game.r, sample)
    succ[over] = -1  # a finished game has no moves (its row is meaningless)
    for objective, look in lookups.items():
        offset = 1.0 if objective == "wins" else 0.0
        finals = Knucklebones(KnuckleRules(plan.columns, plan.rows, plan.faces, objective))
        final = finals.final_values(pos)
        v = look(sample)
        s = np.where(succ >= 0, succ, 0)
        choice = np.where(succ >= 0, offset - look(s.ravel()).reshape(s.shape), -np.inf)
        best = choice.reshape(len(sample), plan.faces, plan.columns).max(axis=2).mean(axis=1)
        residual = np.abs(v - np.where(over, final, best))
        allowed = 2 * plan.tolerance + 1e-12 * max(1.0, float(np.abs(v).max()))
        summary.setdefault("bellman_sample", {})[objective] = {
            "samples": len(sample), "seed": plan.seed, "live": int((~over).sum()),
            "max_residual": float(residual.max()), "allowed": allowed,
        }  # fmt: skip
        checks.append((f"check-tables' sample ({len(sample)} positions, seed {plan.seed}), "
                       f"{objective}: largest Bellman residual {residual.max():.3g} <= "
                       f"{allowed:.3g}", bool(residual.max() <= allowed)))  # fmt: skip

    if args.reference:  # the dry run: every gathered value against the CPU solver's
        from pipeline.games.knucklebones.exact import solver

        for objective, (ids, vals) in values.items():
            rules = KnuckleRules(plan.columns, plan.rows, plan.faces, objective)
            cpu = solver.solve(rules, "cpu", tol=plan.tolerance).values()
            worst = float(np.abs(cpu[ids] - vals).max())
            checks.append((f"{objective}: the {len(ids):,} gathered values equal the CPU "
                           f"solver's (largest difference {worst:.2g} <= 2 tolerances)",
                           worst <= 2 * plan.tolerance))  # fmt: skip
            if "book" in summary:
                field = labels.FIELDS[objective]
                got = getattr(back, field)
                worst = float(np.abs(got - cpu[back.state_id]).max())
                allowed = 2 * plan.tolerance + contract.FLOAT32_ROUNDING * float(np.abs(cpu).max())
                checks.append(
                    (
                        f"the book's {field} values equal the CPU solver's (largest "
                        f"difference {worst:.2g} <= {allowed:.2g})",
                        worst <= allowed,
                    )
                )

    checks += [(f.line()[5:], bool(f.ok)) for f in findings if f.ok is not None]
    summary["assemble_seconds"] = round(time.perf_counter() - t0, 1)
    write_summary(out, summary)
    for what, ok in checks:
        print(f"{'ok' if ok else 'FAILED'}: {what}")
    return 0 if all(ok for _, ok in checks) else 1


def write_labelled(labelled: Any, path: Path) -> int:
    """Write the labelled set compact; if the file is too big to come back, keep fewer
    positions (the last first: the uniform sample's) until it fits. Returns how many."""
    from pipeline.games.knucklebones.players.artefacts import labelled_writer
    from pipeline.store.files import write_file_atomic

    n = len(labelled)
    write_file_atomic(path, labelled_writer(labelled, compact=True))
    while path.stat().st_size > MAX_BYTES:
        n = int(n * MAX_BYTES / path.stat().st_size * 0.97)
        cut = labelled.subset(slice(0, n))
        cut.meta["cut_to_fit"] = len(labelled) - n
        write_file_atomic(path, labelled_writer(cut, compact=True))
    return n


def git_commit() -> str | None:
    """The checkout's commit where git and the repository are at hand (a device machine gets
    a copy of the working tree without them: pass --commit)."""
    try:
        found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


# -- the summary (plain data: the parent writes it too, without the pipeline) ----------------


def summary_name(board: str) -> str:
    return f"knucklebones-{board}"


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """OUT/knucklebones-BOARD.json and .md."""
    stem = summary_name(summary["board"])
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    (out / f"{stem}.md").write_text(render(summary))


def render(s: dict[str, Any]) -> str:
    """The summary as Markdown: provenance, the solves, what the book tells, the checks."""
    p = s["provenance"]
    lines = [
        f"# The {s['board']} board: exact artefacts{' (dry run: simulator)' if s['dry'] else ''}",
        "",
        f"Made on {p['device']} ({p['made']}), commit {p.get('commit') or 'not recorded'}, code "
        f"hash {p['code_hash'][:12]}, numba-cuda {p['numba_cuda']}, numpy {p['numpy']}; "
        f"{p['values']}.",
        "",
        "| objective | start value | sweeps | every value within | solve s | gathered | gather s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for o, r in s["solves"].items():
        lines.append(
            f"| {o} | {r['start']:.15g} | {r['sweeps']} | {r['bound']:.2g} | "
            f"{r['solve_seconds']:.1f} | {r['gathered']:,} | {r['gather_seconds']:.2f} |"
        )
    if s.get("first_die"):
        lines += ["", "The first player's chance (a draw 1/2) and expected lead by first die:", "",
                  "| first die | chance | expected lead |", "| --- | --- | --- |"]  # fmt: skip
        lines += [f"| {r['die']} | {r['win']:.9f} | {r['diff']:+.6f} |" for r in s["first_die"]]
    if s.get("replies"):
        lines += ["", "The second player's best first placement (facing: opposite the first "
                  "die, removing it when equal; open: another column), its chance and the "
                  "other's:", "", "| first die | die | best | chance | other's chance |",
                  "| --- | --- | --- | --- | --- |"]  # fmt: skip
        for r in s["replies"]:
            other = "-" if r["other_win"] is None else f"{r['other_win']:.6f}"
            lines.append(f"| {r['first']} | {r['die']} | {r['best']} | {r['win']:.6f} | {other} |")
    for key, what in (("labelled", "labelled positions"), ("book", "opening book")):
        if key in s:
            d = s[key]
            extra = (f"{d['positions']:,} positions ({d['play']:,} met in play, {d['uniform']:,} "
                     "uniform)" if key == "labelled" else
                     f"{d['positions']:,} positions within {d['plies']} placements")  # fmt: skip
            lines += ["", f"{what}: `{d['file']}`, {d['bytes']:,} bytes, {extra}"]
    g = s.get("greedy")
    if g:
        state = "converged" if g["converged"] else "cut short by the budget: the bounds hold"
        lines += [
            "",
            f"Greedy against its best response (wins, {g['dtype']} bounds, {g['sweeps']} "
            f"sweeps, {g['seconds']:.1f} s, {state}): moving first it wins "
            f"{g['greedy_first'][0]:.7f}..{g['greedy_first'][1]:.7f}, moving second "
            f"{g['greedy_second'][0]:.7f}..{g['greedy_second'][1]:.7f}.",
        ]
    lines += ["", *(f"- {'ok' if ok else 'FAILED'}: {what}" for what, ok in s["checks"])]
    return "\n".join(lines) + "\n"


# -- the call ----------------------------------------------------------------------------------


def run_call(s: Session, plan: Plan, work: Path, commit: str | None, reference: bool) -> None:
    """The whole call, in order of worth; what the budget cuts comes last and says so."""
    for name in STEP_FILES:  # an earlier call's on the same machine must not be read as this one's
        (work / name).unlink(missing_ok=True)
    if not gpu_session.preflight(s):
        s.check("no GPU this script can use: stopped after the preflight", False)
        return
    me = [sys.executable, str(SCRIPT)]
    common = [*plan.args(), "--work", str(work)]
    ran = s.run("solve wins", [*me, "solve", "--objective", "wins", "--prepare", *common])
    ran.notes.append(gpu_session.last_lines(s, 1))
    if ran.code != 0:
        s.check("the wins solve failed: nothing to assemble", False)
        return
    if s.left() >= NEED["score"] + NEED["assemble"]:
        ran = s.run("solve score", [*me, "solve", "--objective", "score", *common])
        ran.notes.append(gpu_session.last_lines(s, 1))
    else:
        s.check(f"score not solved: {s.left():.0f} s left (the book needs it)", False)
    args = [*me, "assemble", *common, "--out", str(s.out)]
    args += ["--commit", commit] if commit else []
    ran = s.run("assemble", args + (["--reference"] if reference else []))
    summary_file = s.out / f"{summary_name(plan.board)}.json"
    if not summary_file.exists():
        s.check("assemble wrote no summary", False)
        return
    summary = json.loads(summary_file.read_text())
    for what, ok in summary["checks"]:
        s.check(what, ok)
    left = s.left() - MARGIN
    if left >= NEED["greedy"]:
        ran = s.run("greedy (best response)", [*me, "greedy", *common, "--seconds",
                    f"{left - 10:.0f}", *(["--reference"] if reference else [])])  # fmt: skip
        ran.notes.append(gpu_session.last_lines(s, 1))
        found = work / "greedy.json"
        if found.exists():
            summary["greedy"] = g = json.loads(found.read_text())
            if "reference" in g:
                bound = 2 * plan.greedy_tolerance
                summary["checks"].append((
                    f"greedy's chances equal the plain CPU solve's (largest difference "
                    f"{g['reference']['max_diff']:.2g} <= {bound:g})",
                    g["reference"]["max_diff"] <= bound,
                ))  # fmt: skip
                s.check(*summary["checks"][-1])
            write_summary(s.out, summary)
    else:
        s.check(f"greedy not run: {s.left():.0f} s left (it needs {NEED['greedy']:.0f})", False)
    files = [p for p in s.out.iterdir() if p.is_file()]
    s.check(
        f"{len(files)} files to bring back (at most {MAX_FILES}), the largest "
        f"{max(p.stat().st_size for p in files):,} bytes (at most {MAX_BYTES:,})",
        len(files) <= MAX_FILES and all(p.stat().st_size <= MAX_BYTES for p in files),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("inputs", "run", "dry", "prepare", "solve", "assemble",
                                         "greedy"))  # fmt: skip
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the files go ($OUT; dry: /tmp/stb-gpu-artefacts-dry)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/stb-gpu-artefacts"))
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds for the call (225; dry: 900)"
    )
    parser.add_argument("--commit", default=None, help="the commit the working tree is")
    parser.add_argument("--board", default=None, help="3x3d6 (run), 2x2d3 (dry)")
    parser.add_argument("--inputs", default=str(INPUTS))
    parser.add_argument("--plies", type=int, default=REAL.plies)
    parser.add_argument("--samples", type=int, default=REAL.samples)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--tolerance", type=float, default=REAL.tolerance)
    parser.add_argument("--greedy-tolerance", type=float, default=REAL.greedy_tolerance)
    parser.add_argument("--successors-of", type=int, default=REAL.successors_of)
    parser.add_argument("--objective", choices=("wins", "score"), default="wins")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--games", type=int, default=GAMES)
    parser.add_argument("--uniform", type=int, default=UNIFORM)
    parser.add_argument("--output", default=str(INPUTS))
    args = parser.parse_args()
    if args.step == "inputs":
        args.board = args.board or "3x3d6"
        args.seed = INPUT_SEED if args.seed is None else args.seed
        return inputs_step(args)
    if args.step in ("prepare", "solve", "assemble", "greedy"):
        args.board = args.board or "3x3d6"
        args.seed = REAL.seed if args.seed is None else args.seed
        step = {"prepare": prepare_step, "solve": solve_step, "assemble": assemble_step,
                "greedy": greedy_step}[args.step]  # fmt: skip
        return step(args)
    if args.step == "run":
        out = args.out or Path(os.environ.get("OUT", "gpu-artefacts"))
        s = Session("artefacts", out, dry=False, budget=args.budget or 225.0)
        run_call(s, REAL, args.work, args.commit, reference=False)
        print((out / "artefacts.md").read_text())
        return 0 if s.ok() else 1
    return dry(args)


def dry(args: argparse.Namespace) -> int:
    """The call here: a small board, the CUDA simulator, what a GPU machine lacks refused."""
    out = args.out or Path("/tmp/stb-gpu-artefacts-dry")
    shutil.rmtree(out, ignore_errors=True)
    work = out.parent / f"{out.name}-work"
    shutil.rmtree(work, ignore_errors=True)
    c, r, f = parse_board(args.board or "2x2d3")
    positions = work / "positions.npz"
    plan = replace(REAL, columns=c, rows=r, faces=f, inputs=positions, plies=min(args.plies, 3),
                   samples=min(args.samples, 50), greedy_tolerance=1e-9)  # fmt: skip
    s = Session("artefacts", out, dry=True, budget=args.budget or 900.0)
    s.run("inputs (the small board's positions)", [
        sys.executable, str(SCRIPT), "inputs", "--board", f"{c}x{r}d{f}", "--games", "60",
        "--uniform", "100", "--seed", "5", "--output", str(positions),
    ])  # fmt: skip
    run_call(s, plan, work, args.commit or "dry-run", reference=True)
    print(f"artefacts: {'ok' if s.ok() else 'FAILED'} ({out / 'artefacts.md'})")
    return 0 if s.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
