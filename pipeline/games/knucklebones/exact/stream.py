"""Knucklebones boards built without a graph: the exact solver's tables, a batch at a time.

The graph build of a board holds every move (the 3x2 board: 77 million moves, 6.8 GB) and runs
the graph value iteration. Here :func:`pipeline.games.knucklebones.exact.solver.solve` (on the CPU,
:func:`pipeline.games.knucklebones.exact.cpu.solve`) solves the board from the state ids alone
(bounds, no moves), then the tables are produced by blocks of state ids: ``states`` (every
state), ``policy`` (every (live state, face)) and, when asked, ``moves`` and ``edges`` (every
legal move), with the columns and rows of the graph build:

- rows in the same order (state id, then face, then column label), the same integer columns
  (ids, labels, tie counts) and the same texts; ``best_move`` and ``move`` as the graph build
  writes them (the list holding the 1-based column);
- values within :data:`BUILD_TOLERANCE` of the exact ones (the solver's proof; the graph build
  stops when a sweep changes no value by more than 1e-12, and differs from these by less than
  1e-12 on 2x2, 2x3 and 3x2); ties within 1e-12 (relative) go to the largest column label, as
  in the graph build (a tolerance well below the tie rule's, so true ties stay ties);
- ``residual`` is twice the solver's bound: the largest possible |value - its Bellman
  recomputation| (the recomputation moves by at most the bound, and the value is within the
  bound of the exact value), which the ``bellman`` contract allows.

Memory is the solver's (16 bytes a position plus its compact sweeps) and one block of rows.
The kernels that make a block release the GIL (``nogil``), so that the table writer threads
(:mod:`pipeline.store.stream_writer`) encode the previous blocks meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit, prange

from pipeline import progress
from pipeline.errors import UsageError
from pipeline.games.base import Streamed
from pipeline.games.knucklebones.exact import cpu as exact
from pipeline.games.knucklebones.exact import solver
from pipeline.games.knucklebones.exact.solution import Solution
from pipeline.games.knucklebones.game import Knucklebones, PairTables
from pipeline.games.knucklebones.players import decisions as sample

#: The build's bound on |value - exact value|: far below the tie rule's 1e-12, so that moves
#: whose exact values tie stay tied (two values within 1e-13 of equal ones differ by 2e-13).
BUILD_TOLERANCE = 1e-13
#: Policy rows per block (a few blocks per Parquet row group).
BLOCK_ROWS = 1 << 19
#: The largest board the build solves in this process. Memory: 16 bytes of bounds a position,
#: 10 a live one (sweep order and pairs), and about 140 an open one in the compact sweeps
#: (3x2: 1.5 GB in all); 50 million positions would take up to about 5 GB.
MAX_STREAM_STATES = 50_000_000


#: Columns with few distinct values, dictionary-encoded; ids, texts and values are written plain
#: (a dictionary of half a million distinct texts per row group costs time and saves nothing).
LOW_CARDINALITY = {
    "states": ["variant", "n_open", "terminal", "rank", "objective", "maximise", "dice",
               "choice_options", "residual"],
    "policy": ["variant", "roll", "stuck", "best_move", "n_optimal", "n_moves", "kind"],
    "moves": ["variant", "roll", "move", "is_best"],
    "edges": ["variant", "dice", "roll", "prob", "move", "reward", "sign", "kind"],
}  # fmt: skip


def parquet_options(table: str) -> dict[str, object]:
    """ParquetWriter options of a streamed table: zstd like every table, dictionaries where they
    pay, min/max statistics on what readers filter by (variant, state_id, roll). A third less
    encoding time than dictionaries and statistics on every column, and smaller files."""
    return {
        "compression": "zstd",
        "use_dictionary": LOW_CARDINALITY[table],
        "write_statistics": ["variant", "state_id", "roll"],
    }


class StreamedKnucklebones(Knucklebones):
    """Knucklebones whose `build`, for a board stored on its own, runs the graph-free solver
    (the named variants are these; the hook lives here, not in game.py, because this module
    needs the solver, which needs game.py)."""

    devices = solver.DEVICES

    def stream(self, tables: Sequence[str], device: str = "cpu") -> Streamed:
        """The build of the board's tables by the graph-free solver (see the module docstring),
        solved on the CPU or, with ``device="cuda"``, on one GPU (:mod:`.gpu`).

        A board above :data:`MAX_STREAM_STATES` positions (the full game) is built on the GPU
        only, as the lean states table of :func:`lean_stream`; UsageError on the CPU (it is
        solved there by ``stb-pipeline knucklebones solve-exact`` on a Dask cluster instead).
        """
        n_states = self.n_states
        if device == "cuda":
            from pipeline.games.knucklebones.exact import gpu

            gpu.cuda_module()  # no numba-cuda or no GPU: say so before any work
            if n_states > MAX_STREAM_STATES:
                return lean_stream(self)
        elif n_states > MAX_STREAM_STATES:
            raise UsageError(
                f"{n_states:,} positions are too many to build on the CPU (the bounds alone take "
                f"{16 * n_states / 1e9:.0f} GB): build it with --device cuda on one GPU, or solve "
                "it with `stb-pipeline knucklebones solve-exact --workers N` "
                "(docs/knucklebones-full-game.md)"
            )
        wanted = tuple(tables)
        found: dict[str, Any] = {"nodes": 0, "moves": 0}
        offset = 1.0 if self.r.objective == "wins" else 0.0
        out = Streamed(
            tables=wanted,
            batches=iter(()),
            constants={
                "states": {"objective": self.objective, "maximise": True},
                "policy": {"stuck": False, "kind": "move"},
                "edges": {
                    "dice": 1,
                    "prob": 1 / self.r.faces,
                    "reward": offset,
                    "sign": -1,
                    "kind": "move",
                },
            },
            options={t: parquet_options(t) for t in wanted},
            n_states=n_states,
            start_value=lambda: float(found["solution"].value[self.start_state()]),
            counts=lambda: (found["nodes"], found["moves"]),
            what="value iteration without a graph",
        )
        out.batches = _batches(self, out, found, device)
        return out


def _solve(game: Knucklebones, device: str, tol: float, dtype: type | None = None) -> Solution:
    """Every value of ``game``'s board, within ``tol``, on ``device`` (the sweeps a progress
    job)."""
    with progress.task("sweeps", unit="sweeps") as job:

        def report(sweep: int, residual: float, bound: float, rate: float) -> None:
            job.update(sweep, note=f"every value within {bound:.1e}")
            if device == "cuda":  # the GPU run's record: each sweep's rate (the first compiles)
                progress.log(f"sweep {sweep}: change {residual:.3g}, bound {bound:.3g}, "
                             f"{rate:,.0f} positions/s")  # fmt: skip

        return solver.solve(game.r, device, tol=tol, progress=report, dtype=dtype)


def _batches(
    game: Knucklebones, out: Streamed, found: dict[str, Any], device: str = "cpu"
) -> Iterator[dict]:
    """Solve, then yield the rows of each block of state ids as {table: columns}."""
    sol = _solve(game, device, BUILD_TOLERANCE).host()  # blocks read the values many times
    found["solution"] = sol
    skipped = [t for t in ("moves", "edges") if t not in out.tables]
    out.note = (
        f"solved without a graph: {sol.sweeps} sweeps, every value within {sol.bound:.1e}"
        + (f"; {' and '.join(skipped)} skipped (--moves, --edges write them)" if skipped else "")
    )
    step = max(1, BLOCK_ROWS // game.r.faces)
    regrets, edges = "moves" in out.tables, "edges" in out.tables
    with progress.task("tables", total=game.n_states, unit="states") as job:
        for a in range(0, game.n_states, step):
            b = min(a + step, game.n_states)
            batch = _block(game, sol, a, b, regrets or edges)
            found["nodes"] += batch["policy"]["state_id"].shape[0]
            found["moves"] += int(batch["policy"]["n_moves"].sum(dtype=np.int64))
            if edges:
                batch["edges"] = {k: batch["moves"][k] for k in EDGE_COLUMNS}
            if not regrets:
                batch.pop("moves", None)
            yield batch
            job.advance(b - a)


#: The lean table's bound on |value - exact value| before float32 rounding (float64 bounds on
#: the GPU; :data:`pipeline.games.knucklebones.exact.gpu.FLOAT32_TOLERANCE` when only float32 fit).
LEAN_TOLERANCE = 1e-11
#: States per batch of the lean table: one Parquet row group each (about 5 MB on disk).
LEAN_ROWS = 1 << 20


#: The lean states table's columns: the id, the value, and the constants that say what the
#: value is (the variant, its objective and direction, its bound), all required (never null).
#: The other 29 columns of ``states`` follow from the id and are not written: as nulls they
#: cost several times the encoding of these (`just bench-lean-write`).
LEAN_COLUMNS = ("variant", "state_id", "objective", "maximise", "value", "residual")


def lean_states_options() -> dict[str, object]:
    """ParquetWriter options of the lean states table: ``state_id`` delta-encoded (consecutive
    ids cost almost nothing), ``value`` split into byte streams (a float32 value held in the
    float64 column has zero low bytes, which zstd then stores in next to nothing), statistics
    on ``state_id`` only, so that a lookup reads one row group (the file holds one variant)."""
    return {
        "compression": "zstd",
        "use_dictionary": ["variant", "objective", "maximise", "residual"],
        "column_encoding": {"state_id": "DELTA_BINARY_PACKED", "value": "BYTE_STREAM_SPLIT"},
        "write_statistics": ["state_id"],
    }


def lean_stream(game: Knucklebones, rows: int = LEAN_ROWS, device: str = "cuda") -> Streamed:
    """The full game's build on the GPU: the ``states`` table, lean, and ``decisions``.

    One row per position, sorted by state id, with ``state_id`` and ``value`` (the bounds'
    midpoint rounded to float32: enough for play, and half the bytes; ``residual`` says the
    bound, the solver's plus the rounding). Every other column of ``states`` follows from the
    id (:func:`exact.pairs_of` and the pair tables) and is derived on read
    (:data:`LEAN_COLUMNS`). No policy: 29 billion (position, die) rows cannot pay for
    themselves when a move's value is one lookup of its successor's value
    (:mod:`pipeline.answer.boards`). The values stream from the GPU in id ranges of ``rows``:
    host memory holds one range. ``device="cpu"`` writes the same table from the CPU solver
    (small boards: the lookups' tests). ``decisions``
    (:mod:`pipeline.games.knucklebones.players.decisions`) holds the openings and a fixed
    sample of positions with each column's successor and each heuristic player's pick, which
    the SQL library prices against these values.
    """
    dtype, tol = _precision(game, device)
    tb = exact.tables(game.r)
    # the solver's bound plus float32 rounding: half an ulp of the largest |value|
    residual = 2 * (tol + float(max(abs(tb.low), abs(tb.high))) * 2.0**-24)
    found: dict[str, Any] = {}
    out = Streamed(
        tables=("states", "decisions"),
        batches=iter(()),
        constants={"states": {"objective": game.objective, "maximise": True, "residual": residual}},
        options={"states": lean_states_options()},
        columns={"states": LEAN_COLUMNS},
        n_states=game.n_states,
        start_value=lambda: float(found["start"]),
        counts=lambda: (0, 0),
        what="value iteration on the GPU",
    )

    def batches() -> Iterator[dict]:
        with progress.task("decisions: openings and the sample, each player's pick"):
            picked = sample.decision_rows(game)
        yield {
            "decisions": {k: pa.array(v) if isinstance(v, list) else v for k, v in picked.items()}
        }
        sol = _solve(game, device, tol, dtype)
        found["solution"] = sol
        found["start"] = sol.value_of(game.start_state())
        out.note = _solved_note(sol, device, dtype, found["start"])
        with progress.task("tables", total=game.n_states, unit="states") as job:
            for a in range(0, game.n_states, rows):
                b = min(a + rows, game.n_states)
                value = sol.values(a, b).astype(np.float32).astype(np.float64)
                yield {"states": {"state_id": np.arange(a, b, dtype=np.int64), "value": value}}
                job.advance(b - a)
        # the next objective's solve needs the GPU's memory: drop these bounds now
        del sol
        found.pop("solution")

    out.batches = batches()
    return out


def _precision(game: Knucklebones, device: str) -> tuple[type, float]:
    """The bounds' dtype and the solve's tolerance: float64 on the CPU; on the GPU the one that
    fits, refused here, before any work, when neither float64 nor float32 bounds fit."""
    from pipeline.games.knucklebones.exact import gpu

    if device != "cuda":
        return np.float64, LEAN_TOLERANCE
    dtype = gpu.pick_dtype(game.n_states, gpu.FLOAT32_TOLERANCE, gpu.free_memory(gpu.cuda_module()))
    return dtype, LEAN_TOLERANCE if dtype == np.float64 else gpu.FLOAT32_TOLERANCE


def _solved_note(sol: Solution, device: str, dtype: type, start: float) -> str:
    """The build's line about the lean solve."""
    return (
        f"solved on the {'GPU' if device == 'cuda' else 'CPU'}: {sol.sweeps} sweeps "
        f"({np.dtype(dtype).name} bounds; {sol.sweep_seconds:.1f} s of sweeps, "
        f"{sol.seconds:.1f} s with the compiling), every value within {sol.bound:.1e}, "
        f"start value {start:.15g}, stored as "
        "float32; states lean, no policy; decisions: the openings and a fixed sample"
    )


#: Columns of an edges row that a moves row has too (the others are constants).
EDGE_COLUMNS = ("state_id", "tiles", "roll", "move", "next_state_id", "next_tiles")


def _block(
    game: Knucklebones, sol: Solution, a: int, b: int, every_move: bool
) -> dict[str, dict[str, Any]]:
    """The states and policy rows (and every legal move's, with ``every_move``) of ids a..b-1."""
    rules, value = game.r, sol.value
    ids = np.arange(a, b, dtype=np.int64)
    pos = exact.pairs_of(rules, ids)
    term = game.terminal_mask(pos)
    mine, theirs = game.scores(pos)
    n_open = 2 * rules.slots - game.t.mover_size[pos].sum(1) - game.t.opp_size[pos].sum(1)
    n_open = n_open.astype(np.int16)
    states = {
        "state_id": ids,
        "tiles": board_texts(game, pos),
        "n_open": n_open,
        "score": (mine - theirs).astype(np.int64),
        "terminal": term,
        "rank": n_open.astype(np.int32),
        "value": value[a:b],
        "dice": np.ma.array(np.ones(b - a, dtype=np.int16), mask=term),
        "choice_options": (~term).astype(np.int16),
        "residual": np.full(b - a, 2 * sol.bound),
        "mover_score": mine.astype(np.int32),
        "opponent_score": theirs.astype(np.int32),
    }
    p = exact.policy_block(rules, value, a, b)
    node_pos = pos[p["state_id"] - a]
    policy = {
        "state_id": p["state_id"],
        "tiles": board_texts(game, node_pos),
        "roll": p["roll"].astype(np.int16),
        "best_move": _move_lists(p["best_move"]),
        "next_state_id": p["next_state_id"],
        "next_tiles": _texts(game, p["next_state_id"]),
        "value": p["value"],
        "n_optimal": p["n_optimal"],
        "n_moves": p["n_moves"],
    }
    batch = {"states": states, "policy": policy}
    if every_move:
        batch["moves"] = _moves(game, p, node_pos, value)
    return batch


def _moves(
    game: Knucklebones, p: dict[str, np.ndarray], node_pos: np.ndarray, value: np.ndarray
) -> dict[str, Any]:
    """Every legal move of the policy rows ``p``: node, then column label (the graph's order)."""
    succ = p["successors"]
    node, label = np.nonzero(succ >= 0)  # row-major: by node, then label
    nxt = succ[node, label]
    offset = 1.0 if game.r.objective == "wins" else 0.0
    move_value = offset - value[nxt]
    regret = np.maximum(p["value"][node] - move_value, 0.0)
    return {
        "state_id": p["state_id"][node],
        "tiles": board_texts(game, node_pos[node]),
        "roll": p["roll"][node].astype(np.int16),
        "move": _move_lists(label),
        "next_state_id": nxt,
        "next_tiles": _texts(game, nxt),
        "value": move_value,
        "regret": regret,
        "is_best": label == p["best_move"][node],
    }


def _texts(game: Knucklebones, ids: np.ndarray) -> pa.Array:
    """The ``tiles`` text of each state id."""
    return board_texts(game, exact.pairs_of(game.r, ids))


def board_texts(game: Knucklebones, pos: np.ndarray) -> pa.Array:
    """The ``tiles`` text of rows of sorted pair indices, as an Arrow string array: the text of
    :meth:`~pipeline.games.knucklebones.game.Knucklebones.board_texts`, written by a compiled
    kernel straight into Arrow's buffers (tens of millions of rows per table)."""
    mover, opp = _pair_texts(game.r.rows, game.r.faces)
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    n = pos.shape[0]
    offsets = np.empty(n + 1, dtype=np.int64)
    _text_lengths(pos, mover[0], opp[0], offsets)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    _write_texts(pos, mover[0], mover[1], opp[0], opp[1], offsets, data)
    if offsets[-1] < 2**31:  # the tables' type (a block of rows always fits)
        return pa.StringArray.from_buffers(
            n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
        )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


@lru_cache(maxsize=8)
def _pair_texts(rows: int, faces: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per facing pair, the text of its mover column and of its opponent column, each as
    (start offsets [pairs + 1], bytes)."""
    t = PairTables(rows, faces)
    out = []
    for cols in (t.pair_mover, t.pair_opp):
        texts = [t.column_text(int(col)).encode() for col in cols]
        starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in texts], out=starts[1:])
        out.append((starts, np.frombuffer(b"".join(texts), dtype=np.uint8)))
    return tuple(out)


@njit(cache=True, nogil=True)
def _text_lengths(pos, mover_at, opp_at, offsets):
    """offsets[i + 1] - offsets[i]: the length of row i's text (its columns, 2c - 2 slashes and
    a semicolon)."""
    c = pos.shape[1]
    offsets[0] = 0
    for i in range(pos.shape[0]):
        k = 2 * c - 1
        for j in range(c):
            p = pos[i, j]
            k += mover_at[p + 1] - mover_at[p] + opp_at[p + 1] - opp_at[p]
        offsets[i + 1] = offsets[i] + k


@njit(cache=True, parallel=True, nogil=True)
def _write_texts(pos, mover_at, mover, opp_at, opp, offsets, data):
    """Row i's text into data[offsets[i]:offsets[i + 1]]: "m0/m1/...;o0/o1/..."."""
    c = pos.shape[1]
    slash, semicolon = ord("/"), ord(";")
    for i in prange(pos.shape[0]):
        k = offsets[i]
        for side in range(2):
            at, text = (mover_at, mover) if side == 0 else (opp_at, opp)
            for j in range(c):
                if j > 0:
                    data[k] = slash
                    k += 1
                p = pos[i, j]
                for x in range(at[p], at[p + 1]):
                    data[k] = text[x]
                    k += 1
            if side == 0:
                data[k] = semicolon
                k += 1


def _move_lists(label: np.ndarray) -> pa.Array:
    """Column labels (0-based) as the tables write a move: the list holding the 1-based column."""
    n = label.shape[0]
    offsets = pa.array(np.arange(n + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array((label + 1).astype(np.int8)))
