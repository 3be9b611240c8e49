"""The rows of a variant's tables built from its game graph: the stages enumerate, edges,
solve and policy, the game's own tables (:func:`build_hooks`), in the order a person reads them
(:func:`start_first`).

Polars frames: :mod:`pipeline.stages.build` imports this module only when it builds a variant
from its graph, so that a streamed build (the full Knucklebones game on a GPU machine, which has
no polars) never loads polars.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import polars as pl

from pipeline import progress
from pipeline.errors import PipelineError, UsageError
from pipeline.games.columns import labels
from pipeline.games.solved import Solved
from pipeline.solve.exact import solve_exact
from pipeline.solve.rank_order import best_moves
from pipeline.stages.names import STAGES
from pipeline.store import tables


def build_hooks() -> list[Callable[[Solved], dict[str, pl.DataFrame]]]:
    """Extra tables written by `build`: the game's own (summary, strategy benchmarks, ...),
    and the strategies stage's where the game runs it in a build (cheap boxes)."""
    return [
        lambda s: s.game.extra_tables(s),
        lambda s: one_thread(s.game.rule_search, s) if s.game.search_in_build else {},
    ]


def one_thread(hook: Callable[[Solved], dict[str, pl.DataFrame]], s: Solved) -> Any:
    """``hook(s)`` with its compiled kernels on one thread (numba's thread count is per
    thread): the hooks run beside the stages, which keep the other core busy, and the small
    boxes a build searches gain nothing from splitting a pass in two (it only adds waiting)."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return hook(s)
    finally:
        numba.set_num_threads(before)


def state_rows(s: Solved, with_values: bool) -> pl.DataFrame:
    """The states table rows of a variant (values and dice choice only after solving)."""
    g = s.graph
    frame = pl.DataFrame({"state_id": g.state_id}).hstack(s.states())
    frame = frame.with_columns(
        terminal=pl.Series(~np.isnan(g.terminal)),
        rank=pl.Series(g.rank, dtype=pl.Int32),
        objective=pl.lit(s.game.objective),
        maximise=pl.lit(g.maximise),
    )
    if not with_values:
        return frame.with_columns(value=pl.lit(None, dtype=pl.Float64))
    sol = s.solve()
    choice = pl.Series(sol.choice).replace(-1, None)
    if s.exact:
        frame = frame.with_columns(value_exact=pl.Series(exact_values(s), dtype=pl.String))
    return frame.with_columns(
        value=pl.Series(sol.value),
        **{s.game.choice_name(): choice.cast(pl.Int16)},
        choice_options=pl.Series(sol.n_choices, dtype=pl.Int16),
        # verify's Bellman contract allows this much (0 for backward induction).
        residual=pl.lit(float(sol.residual)),
    )


def exact_values(s: Solved) -> list[str]:
    """Exact values as fraction strings, after checking the float solve agrees to 1e-12."""
    if s.graph.cyclic:
        raise UsageError(f"--exact does not apply to {s.variant.name}: its graph has cycles")
    try:
        exact = solve_exact(s.graph)
    except ValueError as exc:
        raise UsageError(f"{s.variant.name}: {exc}") from None
    floats = s.solve().value
    worst = max(abs(float(f) - v) for f, v in zip(exact, floats.tolist(), strict=True))
    if worst > 1e-12:
        raise PipelineError(f"{s.variant.name}: float and exact solves differ by {worst:.3g}")
    return [str(f) for f in exact]


def _gather_states(s: Solved, idx: np.ndarray, prefix: str = "") -> pl.DataFrame:
    """State id and tiles of the states at graph indices ``idx`` (null where idx < 0)."""
    ok = idx >= 0
    safe = np.where(ok, idx, 0)
    frame = pl.DataFrame(
        {"ok": ok, "id": s.graph.state_id[safe], "tiles": s.states()["tiles"].gather(safe)}
    )
    return frame.select(
        pl.when("ok").then("id").alias(f"{prefix}state_id"),
        pl.when("ok").then("tiles").alias(f"{prefix}tiles"),
    )


def edge_rows(s: Solved) -> pl.DataFrame:
    """One row per (state, dice, roll, move): the successor edges, with each roll's probability.

    A roll with no legal move has one row with a null move: ``reward`` is then the final value.
    Each row's value is ``reward + sign * value(next_state_id)``.
    """
    g = s.graph
    starts = g.move_starts()
    count = starts[g.ch_node + 1] - starts[g.ch_node]
    rows = np.repeat(np.arange(g.ch_state.shape[0]), count)
    first = np.repeat(starts[g.ch_node], count)
    within = np.arange(rows.shape[0]) - np.repeat(np.cumsum(count) - count, count)
    mv = first + within
    frame = _gather_states(s, g.ch_state[rows])
    nxt = _gather_states(s, g.mv_dst[mv], prefix="next_")
    return (
        frame.hstack(
            [
                pl.Series(s.game.choice_name(), g.ch_choice[rows], dtype=pl.Int16),
                pl.Series("roll", g.node_roll[g.ch_node[rows]], dtype=pl.Int16),
                pl.Series("prob", g.ch_prob[rows]),
                s.game.describe_moves(g.mv_label[mv]).alias("move"),
            ]
        )
        .hstack(nxt)
        .with_columns(
            reward=pl.Series(g.mv_offset[mv]),
            sign=pl.Series(g.mv_scale[mv], dtype=pl.Int8),
            kind=move_kind(g.mv_label[mv] >= 0, g.mv_dst[mv] >= 0),
        )
    )


#: The labels of move_kind's codes.
KINDS = ("move", "pass", "end")


def move_kind(has_move: np.ndarray, has_next: np.ndarray) -> pl.Series:
    """What a row of edges or policy is: ``move``; or, with no legal move, ``end`` (the game
    ends) or ``pass`` (play goes on with the other player). A label instead of a bare NULL."""
    code = np.where(has_move, 0, np.where(has_next, 1, 2))
    return labels("kind", KINDS, code)


def policy_rows(
    s: Solved, with_moves: bool = True
) -> tuple[pl.DataFrame | tables.ChunkedRows, pl.DataFrame | None]:
    """The policy (best move of every (state, roll)) and every legal move with its regret.

    Without ``with_moves`` the moves table is not built (None). A policy of more than
    :data:`pipeline.store.tables.STREAM_ROWS` nodes comes as
    :class:`~pipeline.store.tables.ChunkedRows`,
    built a slice of nodes at a time while it is written.
    """
    g, sol = s.graph, s.solve()
    best, n_optimal = best_moves(g, sol)
    n_nodes = g.node_state.shape[0]
    label = g.mv_label[best]
    n_optimal = np.where(label < 0, 0, n_optimal).astype(np.int16)
    n_moves = np.bincount(g.mv_node[g.mv_label >= 0], minlength=n_nodes).astype(np.int16)

    def policy_slice(lo: int, hi: int) -> pl.DataFrame:
        pick = best[lo:hi]
        return (
            _gather_states(s, g.node_state[lo:hi])
            .hstack(
                [
                    pl.Series("roll", g.node_roll[lo:hi], dtype=pl.Int16),
                    pl.Series("stuck", label[lo:hi] < 0),
                    s.game.describe_moves(label[lo:hi]).alias("best_move"),
                ]
            )
            .hstack(_gather_states(s, g.mv_dst[pick], prefix="next_"))
            .with_columns(
                value=pl.Series(sol.node_value[lo:hi]),
                n_optimal=pl.Series(n_optimal[lo:hi], dtype=pl.Int16),
                n_moves=pl.Series(n_moves[lo:hi], dtype=pl.Int16),
                kind=move_kind(label[lo:hi] >= 0, g.mv_dst[pick] >= 0),
            )
        )

    policy: pl.DataFrame | tables.ChunkedRows
    if n_nodes > tables.STREAM_ROWS:
        step = tables.SLICE_ROWS

        def chunks() -> Iterator[pl.DataFrame]:
            for lo in range(0, n_nodes, step):
                yield policy_slice(lo, min(lo + step, n_nodes))

        policy = tables.ChunkedRows(n_nodes, policy_slice(0, 0).schema, chunks)
    else:
        policy = policy_slice(0, n_nodes)
    return policy, (move_rows(s, best) if with_moves else None)


def move_rows(s: Solved, best: np.ndarray) -> pl.DataFrame:
    """Every legal move of every (state, roll): its value, its regret, and whether it is the
    policy's move (``best``: the best move row of each node)."""
    g, sol = s.graph, s.solve()
    legal = np.flatnonzero(g.mv_label >= 0)
    node = g.mv_node[legal]
    node_best = sol.node_value[node]
    regret = (node_best - sol.move_value[legal]) * (1 if g.maximise else -1)
    is_best = np.zeros(g.mv_node.shape[0], dtype=bool)
    is_best[best] = True
    return (
        _gather_states(s, g.node_state[node])
        .hstack(
            [
                pl.Series("roll", g.node_roll[node], dtype=pl.Int16),
                s.game.describe_moves(g.mv_label[legal]).alias("move"),
            ]
        )
        .hstack(_gather_states(s, g.mv_dst[legal], prefix="next_"))
        .with_columns(
            value=pl.Series(sol.move_value[legal]),
            regret=pl.Series(np.maximum(regret, 0.0)),
            is_best=pl.Series(is_best[legal]),
        )
    )


def stage_frames(s: Solved, stages: Sequence[str]) -> dict[str, pl.DataFrame | tables.ChunkedRows]:
    """The tables the requested stages produce for one variant."""
    return dict(iter_stage_frames(s, stages))


def iter_stage_frames(s: Solved, stages: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """The tables the requested stages produce for one variant, each as soon as it is made
    (so that it can be written and dropped before the next is computed).

    With every stage (a build), the build hooks' tables (strategy benchmarks, reach, the
    strategies stage's, ...) are computed on a second thread meanwhile: they only read the solved
    graph, and their compiled and numpy work runs beside the stages' on the other core.
    """
    start = s.game.start_state()
    hooks = None
    if set(STAGES) <= set(stages):
        s.solve(), s.states()  # computed once, before two threads read them
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="stb-hooks")
        hooks = pool.submit(lambda: [item for hook in build_hooks() for item in hook(s).items()])
        pool.shutdown(wait=False)
    try:
        for stage in stages:
            out: dict[str, pl.DataFrame | tables.ChunkedRows] = {}
            with progress.task(f"{s.variant.name}: {stage}"):
                _run_stage(s, stage, stages, out)
            for name, frame in out.items():
                yield name, start_first(frame, start)
            del out
        if hooks is not None:
            with progress.task(f"{s.variant.name}: strategy tables"):
                extra = hooks.result()
            while extra:
                name, frame = extra.pop(0)
                yield name, frame if name in OWN_ORDER else start_first(frame, start)
    finally:
        if hooks is not None and not hooks.cancel():
            concurrent.futures.wait([hooks])  # a failed build lets the thread end first


#: Hook tables whose rows keep the order they are made in (a ranking, a curve), not by state.
OWN_ORDER = frozenset({"strategy_search", "strategy_exceptions"})


def start_first(frame: pl.DataFrame | tables.ChunkedRows, start: int) -> Any:
    """The rows of the start state first, then by state (within each strategy, if any), so that
    the first rows a person sees are the game's opening. Rows of one state keep their order.

    Tables too large to hold (:class:`~pipeline.store.tables.ChunkedRows`) keep graph order.
    """
    if not isinstance(frame, pl.DataFrame) or "state_id" not in frame.columns:
        return frame
    state = frame["state_id"]
    if state.null_count():
        return frame.sort([pl.col("state_id") != start, "state_id"], maintain_order=True)
    ids = state.to_numpy()
    keys = [ids, ids != start]  # np.lexsort: last key first, and stable
    if "strategy" in frame.columns:
        # strategies keep the order the game lists them in (optimal first)
        keys.append(_first_seen_codes(frame["strategy"]))
    if _in_order(keys):  # most tables are made in this order already
        return frame
    if len(keys) == 2 and _in_order(keys[:1]):
        # rows by state, the start state's somewhere among them: move that block to the front
        lo, hi = np.searchsorted(ids, [start, start + 1])
        return pl.concat([frame.slice(lo, hi - lo), frame.slice(0, lo), frame.slice(hi)])
    return frame[np.lexsort(keys)]


def _first_seen_codes(names: pl.Series) -> np.ndarray:
    """Each row's name as its rank in order of first appearance. Names in contiguous blocks
    (as the strategy tables are made) are numbered by their runs, without hashing a string
    per row."""
    runs = names.rle()
    if runs.struct.field("value").n_unique() == runs.len():
        return names.rle_id().to_numpy()
    order = {name: i for i, name in enumerate(names.unique(maintain_order=True))}
    return names.replace_strict(order, return_dtype=pl.Int32).to_numpy()


def _in_order(keys: list[np.ndarray]) -> bool:
    """Whether rows are sorted by ``keys`` (np.lexsort's convention: the last key first), in
    one pass instead of a sort."""
    if keys[0].shape[0] < 2:
        return True
    ahead = np.ones(keys[0].shape[0] - 1, dtype=bool)  # row i+1 not before row i
    for key in keys:  # from the least significant key up
        step = np.sign(np.diff(key.astype(np.int64)))
        ahead = (step > 0) | ((step == 0) & ahead)
    return bool(ahead.all())


def _run_stage(s: Solved, stage: str, stages: Sequence[str], out: dict[str, Any]) -> None:
    """Add one stage's tables to ``out`` and time it."""
    t0 = time.perf_counter()
    if stage == "enumerate" and "solve" not in stages:
        out["states"] = state_rows(s, with_values=False)
    elif stage == "edges" and not s.game.skip_edges:
        out["edges"] = edge_rows(s)
    elif stage == "solve":
        out["states"] = state_rows(s, with_values=True)
    elif stage == "policy":
        out["policy"], moves = policy_rows(s, with_moves=not s.game.skip_edges)
        if moves is not None:
            out["moves"] = moves
    elif stage == "strategies" and not set(STAGES) <= set(stages):
        out.update(s.game.rule_search(s))  # in a build, a hook computes them (or not)
    s.seconds[stage] = s.seconds.get(stage, 0.0) + time.perf_counter() - t0
