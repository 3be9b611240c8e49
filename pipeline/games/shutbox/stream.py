"""One-player Shut the Box solved layer by layer without a game graph, its tables streamed.

The graph of a big box (every (state, roll, move) row) does not fit in memory: 24 tiles with
three dice have 709 million moves. Here the moves are generated from the rules inside compiled
kernels (:mod:`pipeline.games.shutbox.stream_kernels`), and only the value of every state
(float64, indexed by state id, 2**tiles of them) is kept. States are visited in the rank order
of :meth:`ShutTheBox.graph` (number of open tiles, then id): a move only shuts tiles, so a layer
reads only lower layers and its states can be solved in parallel (``prange``). Each layer is cut
into chunks of states whose rows are yielded as numpy column batches (:class:`Batch`) and may be
written straight to Parquet (:mod:`pipeline.store.stream_writer`), so memory does not grow with the
tables.

The results are the graph solve's (with today's NumPy, bit for bit): a node's value is the
best successor value (ties within 1e-12, relative, go to the largest move label, the mask of the
tiles shut); a dice choice's value sums ``count / denom * node value`` over its rolls in
increasing roll order, in the same association as NumPy's ``add.reduceat`` (first term plus a
pairwise sum of the rest), which :func:`pipeline.solve.rank_order.backup_states` uses; ties
between choices go to the larger number of dice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from pipeline.games.dice import roll_distribution
from pipeline.games.shutbox.rules import RuleSet, masks_by_sum
from pipeline.games.shutbox.stream_kernels import (
    NodeColumns,
    chunk_scratch,
    fill_edges,
    fill_moves,
    layer_ids,
    layer_sizes,
    new_nodes,
    node_counts,
    solve_chunk,
    state_numbers,
    stuck_value,
)

#: Policy rows per batch (one Parquet row group each): pyarrow's default row group size.
BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class Compiled:
    """A rule set as the flat arrays the kernels read."""

    rules: RuleSet
    rule: np.ndarray
    """int64 [7]: :meth:`RuleSet.vector` (tiles, one-die mode, one-die sum, ...)."""
    count: np.ndarray
    """int64 [2, width]: ways to roll each total with one die (row 0) and the usual dice (row 1);
    row 0 is all zero when one die is never rolled."""
    denom: np.ndarray
    """int64 [2]: sides ** dice of each row of ``count`` (1 when unused)."""
    dice: np.ndarray
    """int64 [2]: the number of dice of each row: 1 and ``rules.dice``."""
    sub_masks: np.ndarray
    """int64 [K]: every set of tiles a move may shut, grouped by sum, largest mask first."""
    sub_start: np.ndarray
    """int64 [width + 1]: where the masks summing to each total start in ``sub_masks``."""
    maximise: bool

    @property
    def width(self) -> int:
        """One more than the largest roll."""
        return int(self.count.shape[1])


def compile_rules(rules: RuleSet) -> Compiled:
    """The kernels' view of ``rules``: dice distributions and the candidate moves of each roll."""
    width = rules.dice * rules.sides + 1
    count = np.zeros((2, width), dtype=np.int64)
    denom = np.ones(2, dtype=np.int64)
    for row, dice in ((0, 1), (1, rules.dice)):
        if row == 0 and rules.one_die == "never":
            continue
        for total, ways, den in roll_distribution(dice, rules.sides):
            count[row, total] = ways
            denom[row] = den
    sub_masks, sub_start = masks_by_sum(rules, width)
    return Compiled(
        rules,
        np.array(rules.vector(), dtype=np.int64),
        count,
        denom,
        np.array([1, rules.dice], dtype=np.int64),
        sub_masks,
        sub_start,
        rules.objective != "score",
    )


# -- driving the layers ----------------------------------------------------------------------


@dataclass
class Chunk:
    """The raw kernel outputs of one chunk of a layer (see :func:`solve_chunk`)."""

    layer: int
    ids: np.ndarray
    st_out: np.ndarray
    node_start: np.ndarray
    nodes: NodeColumns


@dataclass(frozen=True)
class Batch:
    """The rows of one chunk of a layer, one dict of equal-length numpy columns per table.

    Columns that may be null are ``numpy.ma.MaskedArray`` (masked = null). Rows come in the
    order of today's tables: states by (open tiles, state id); policy by state then roll; moves
    by node then mask, largest first; edges by state, dice, roll, then mask, largest first.
    """

    layer: int
    """Number of open tiles of the chunk's states."""
    states: dict[str, np.ndarray]
    """state_id, n_open, open_sum, score, terminal, rank, value, dice (null when shut),
    choice_options."""
    policy: dict[str, np.ndarray] | None = None
    """One row per (state, roll): state_id, roll, stuck, best_move_mask (tiles shut, as a state
    id; null when stuck), next_state_id (null when stuck), value, n_optimal, n_moves."""
    moves: dict[str, np.ndarray] | None = None
    """One row per legal move: state_id, roll, move_mask, next_state_id, value, regret,
    is_best."""
    edges: dict[str, np.ndarray] | None = None
    """One row per (state, dice, roll, move), a pass row when no move is legal: state_id, dice,
    roll, prob, move_mask (null: pass), next_state_id (null: game over), reward, sign."""


@dataclass
class StreamSolver:
    """Solves one rule set layer by layer; ``value`` holds every state's value (by id)."""

    rules: RuleSet
    c: Compiled = field(init=False)
    value: np.ndarray = field(init=False)
    moves: int = 0
    """Legal (state, roll, move) triples met so far."""
    nodes: int = 0
    """(state, roll) decision nodes met so far (counted when nodes are output)."""

    def __post_init__(self) -> None:
        self.c = compile_rules(self.rules)
        self.value = np.full(1 << self.rules.tiles, np.nan)

    def per_pattern(self) -> np.ndarray:
        """Nodes per state for each availability pattern (index: bits ONE, USUAL)."""
        used = self.c.count > 0
        return np.array(
            [0, used[0].sum(), used[1].sum(), (used[0] | used[1]).sum()], dtype=np.int64
        )

    def rows_per_state(self, regrets: bool, edges: bool) -> int:
        """The most rows one state can add to any table asked for (to size chunks)."""
        cands = np.diff(self.c.sub_start)
        used = self.c.count > 0
        most = int(self.per_pattern().max())
        if regrets:
            most = max(most, int(cands[used[0] | used[1]].sum()))
        if edges:
            most = max(most, int(sum(np.maximum(cands[u], 1).sum() for u in used)))
        return max(most, 1)

    def chunks(self, nodes: bool, states_per_chunk: int | None = None) -> Iterator[Chunk]:
        """Solve every layer, lowest first, yielding its states a chunk at a time.

        With ``nodes`` each chunk also holds its (state, roll) nodes. A chunk has at most
        ``states_per_chunk`` states (default: a whole layer per chunk).
        """
        tiles = self.rules.tiles
        per_pattern = self.per_pattern()
        self.value[0] = stuck_value(0, self.c.rule)
        for k, size in enumerate(layer_sizes(tiles)):
            ids = np.empty(size, dtype=np.int64)
            layer_ids(tiles, k, ids)
            step = max(1, states_per_chunk) if states_per_chunk is not None else size
            for lo in range(0, size, step):
                yield self._solve(k, ids[lo : lo + step], nodes, per_pattern)

    def _solve(self, layer: int, ids: np.ndarray, nodes: bool, per_pattern: np.ndarray) -> Chunk:
        """Run the kernel on one chunk of a layer."""
        c = self.c
        st_out = np.zeros((ids.shape[0], 4), dtype=np.int64)
        node_start = np.zeros(0, dtype=np.int64)
        n_nodes = 0
        if nodes:
            counts = node_counts(ids, c.rule, per_pattern)
            node_start = np.zeros(ids.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts, out=node_start[1:])
            n_nodes = int(node_start[-1])
        nd = new_nodes(n_nodes)
        if layer == 0:  # the shut box: terminal, no choice, no roll
            st_out[0, 0] = -1
        else:
            solve_chunk(
                *chunk_scratch(ids, c.count, c.sub_start), ids, self.value, c.rule, c.count,
                c.denom, c.dice, c.sub_masks, c.sub_start, c.maximise, st_out, node_start, nd,
            )  # fmt: skip
        self.moves += int(st_out[:, 2].sum())
        self.nodes += n_nodes
        return Chunk(layer, ids, st_out, node_start, nd)

    def solve(self) -> np.ndarray:
        """Solve every state (no per-node outputs) and return the values by state id."""
        for _ in self.chunks(nodes=False):
            pass
        return self.value

    def batches(
        self,
        policy: bool = True,
        regrets: bool = False,
        edges: bool = False,
        batch_rows: int = BATCH_ROWS,
        derived: bool = True,
    ) -> Iterator[Batch]:
        """Solve every layer and yield its rows as :class:`Batch` es of about ``batch_rows``
        rows per table (the states batch is smaller: one row per state). Without ``derived``
        the policy leaves out :data:`DERIVED_POLICY` (readers fill them in)."""
        step = max(1, batch_rows // self.rows_per_state(regrets, edges))
        for ch in self.chunks(nodes=policy or regrets, states_per_chunk=step):
            yield Batch(
                ch.layer,
                self._state_columns(ch),
                self._policy_columns(ch, derived) if policy else None,
                self._move_columns(ch) if regrets else None,
                self._edge_columns(ch) if edges else None,
            )

    def _state_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The states batch of a chunk."""
        open_sum, score = state_numbers(ch.ids, self.c.rule)
        n = ch.ids.shape[0]
        return {
            "state_id": ch.ids,
            "n_open": np.full(n, ch.layer, dtype=np.int16),
            "open_sum": open_sum,
            "score": score,
            "terminal": np.full(n, ch.layer == 0),
            "rank": np.full(n, ch.layer, dtype=np.int32),
            "value": self.value[ch.ids],
            "dice": np.ma.masked_less(ch.st_out[:, 0].astype(np.int16), 0),
            "choice_options": ch.st_out[:, 1].astype(np.int16),
        }

    def _policy_columns(self, ch: Chunk, derived: bool = True) -> dict[str, np.ndarray]:
        """The policy batch of a chunk: the best move of every (state, roll) (without
        :data:`DERIVED_POLICY` unless ``derived``)."""
        state, roll, label, nxt, val, n_optimal, n_moves, stuck = ch.nodes
        cols = {
            "state_id": state,
            "roll": roll,
            "best_move_mask": np.ma.array(label, mask=stuck),
            "value": val,
            "n_optimal": n_optimal,
            "n_moves": n_moves,
        }
        if derived:
            cols |= {"stuck": stuck, "next_state_id": np.ma.array(nxt, mask=stuck)}
        return cols

    def _move_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The moves batch of a chunk: every legal move, its value and regret."""
        c = self.c
        row_start, mv_int, mv_float = _rows_room(ch.st_out[:, 2], 5)
        _, roll, label, _, val, _, _, _ = ch.nodes
        fill_moves(
            ch.ids, self.value, c.sub_masks, c.sub_start, c.maximise, ch.node_start, roll, label,
            val, row_start, mv_int, mv_float,
        )  # fmt: skip
        return {
            "state_id": mv_int[:, 0].copy(),
            "roll": mv_int[:, 1].astype(np.int16),
            "move_mask": mv_int[:, 2].astype(np.int32),
            "next_state_id": mv_int[:, 3].copy(),
            "value": mv_float[:, 0].copy(),
            "regret": mv_float[:, 1].copy(),
            "is_best": mv_int[:, 4].astype(bool),
        }

    def _edge_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The edges batch of a chunk: every (state, dice, roll, move) with its probability."""
        c = self.c
        row_start, ed_int, ed_float = _rows_room(ch.st_out[:, 3], 6)
        fill_edges(
            ch.ids, c.rule, c.count, c.denom, c.dice, c.sub_masks, c.sub_start, row_start,
            ed_int, ed_float,
        )  # fmt: skip
        passed = ed_int[:, 3] < 0
        return {
            "state_id": ed_int[:, 0].copy(),
            "dice": ed_int[:, 1].astype(np.int16),
            "roll": ed_int[:, 2].astype(np.int16),
            "prob": ed_float[:, 0].copy(),
            "move_mask": np.ma.array(ed_int[:, 3].astype(np.int32), mask=passed),
            "next_state_id": np.ma.array(ed_int[:, 4], mask=passed),
            "reward": ed_float[:, 1].copy(),
            "sign": ed_int[:, 5].astype(np.int8),
        }


def _rows_room(counts: np.ndarray, n_ints: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each state's rows start (``counts`` rows each) and the room for all of them: int64
    columns ``n_ints`` wide and two float columns, filled by a compiled pass."""
    row_start = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=row_start[1:])
    n = int(row_start[-1])
    return row_start, np.empty((n, n_ints), dtype=np.int64), np.empty((n, 2))


def stream_tables(
    rules: RuleSet,
    policy: bool = True,
    regrets: bool = False,
    edges: bool = False,
    batch_rows: int = BATCH_ROWS,
    derived: bool = True,
) -> tuple[StreamSolver, Iterator[Batch]]:
    """A solver for ``rules`` and the iterator of its batches (see :meth:`StreamSolver.batches`).

    The solve runs as the batches are consumed, reported as a progress job (states solved of
    all of them, the layer reached, states per second); once they are, ``solver.value`` holds
    every state's value by id (e.g. ``solver.value[(1 << tiles) - 1]`` at the start).
    """
    solver = StreamSolver(rules)
    batches = solver.batches(policy, regrets, edges, batch_rows, derived)
    return solver, _tracked(batches, rules.tiles)


def _tracked(batches: Iterator[Batch], tiles: int) -> Iterator[Batch]:
    """``batches`` as one progress job over the 2**tiles states, noting the layer reached."""
    from pipeline import progress

    with progress.task("layers", total=1 << tiles, unit="states") as job:
        for batch in batches:
            job.update(note=f"layer {batch.layer + 1} of {tiles + 1}: {batch.layer} tiles open")
            yield batch
            job.advance(batch.states["state_id"].shape[0])


#: Columns that may hold nulls; the others are declared non-null, which spares the writer
#: their definition levels (a third of the policy table's encoding time).
NULLABLE = {"dice", "best_move_mask", "move_mask", "next_state_id"}
#: Policy columns a reader can derive: stuck = best_move_mask is null, next_state_id =
#: state_id ^ best_move_mask. The build leaves them null (readers fill them in:
#: :data:`pipeline.store.schema.DERIVED`) and ``schemas(lean=True)`` leaves them out: the policy
#: of a big box is hundreds of millions of rows, and these two are a quarter of its encoding.
DERIVED_POLICY = ("stuck", "next_state_id")


def schemas(with_variant: bool = True, lean: bool = False) -> dict[str, pa.Schema]:
    """Arrow schemas of the streamed tables, by name (states, policy, moves, edges).

    Column names and types follow today's tables where they share a column; moves are tile
    masks (``*_mask``, int32) rather than lists of tiles. With ``with_variant``, each starts with
    a ``variant`` column (a constant for :mod:`pipeline.store.stream_writer`), and states end
    with the constants ``objective``, ``maximise`` and ``residual`` (0.0). With ``lean`` the
    policy leaves out :data:`DERIVED_POLICY`.
    """
    i16, i32, i64, f64 = pa.int16(), pa.int32(), pa.int64(), pa.float64()
    fields = {
        "states": [
            ("state_id", i64), ("n_open", i16), ("open_sum", i32), ("score", i64),
            ("terminal", pa.bool_()), ("rank", i32), ("value", f64), ("dice", i16),
            ("choice_options", i16), ("objective", pa.string()), ("maximise", pa.bool_()),
            ("residual", f64),
        ],
        "policy": [
            ("state_id", i64), ("roll", i16), ("stuck", pa.bool_()), ("best_move_mask", i32),
            ("next_state_id", i64), ("value", f64), ("n_optimal", i16), ("n_moves", i16),
        ],
        "moves": [
            ("state_id", i64), ("roll", i16), ("move_mask", i32), ("next_state_id", i64),
            ("value", f64), ("regret", f64), ("is_best", pa.bool_()),
        ],
        "edges": [
            ("state_id", i64), ("dice", i16), ("roll", i16), ("prob", f64),
            ("move_mask", i32), ("next_state_id", i64), ("reward", f64), ("sign", pa.int8()),
        ],
    }  # fmt: skip
    if lean:
        fields["policy"] = [f for f in fields["policy"] if f[0] not in DERIVED_POLICY]
    head = [("variant", pa.string())] if with_variant else []
    return {
        name: pa.schema([pa.field(n, t, nullable=n in NULLABLE) for n, t in head + cols])
        for name, cols in fields.items()
    }


#: Columns with few distinct values: dictionary-encoded. The others (ids, values) are written
#: plain, since a dictionary of a million distinct ids per row group costs time and saves nothing.
LOW_CARDINALITY = {
    "states": ["variant", "n_open", "dice", "choice_options", "objective", "maximise",
               "terminal", "rank", "residual"],
    "policy": ["variant", "roll", "stuck", "best_move_mask", "n_optimal", "n_moves"],
    "moves": ["variant", "roll", "move_mask", "is_best"],
    "edges": ["variant", "dice", "roll", "prob", "move_mask", "sign"],
}  # fmt: skip


#: Columns of state ids: delta-encoded (ids climb within a chunk, so the deltas are small). A
#: tenth less encoding time and size for the policy of a big box than plain values.
ID_COLUMNS = ("state_id", "next_state_id")
#: Rows a data page may hold at most: a row group's (:data:`BATCH_ROWS`), so that a page ends
#: at pyarrow's page size (1 MB) instead of its 20,000 rows. A million-row column chunk of small
#: integers is then one page, not 53 each compressed apart: a seventh less encoding time for the
#: policy of a big box, and a tenth smaller.
PAGE_ROWS = BATCH_ROWS


def parquet_options() -> dict[str, dict[str, object]]:
    """ParquetWriter options for each streamed table: zstd, dictionaries where they pay, delta
    encoding for state ids, pages of up to :data:`PAGE_ROWS` rows, and min/max statistics only
    on what readers filter by (state_id, roll), for row-group pruning."""
    return {
        name: {
            "compression": "zstd",
            "use_dictionary": cols,
            "column_encoding": dict.fromkeys(ID_COLUMNS, "DELTA_BINARY_PACKED"),
            "write_statistics": ["state_id", "roll", "n_open"],
            "max_rows_per_page": PAGE_ROWS,
        }
        for name, cols in LOW_CARDINALITY.items()
    }


def state_constants(rules: RuleSet, variant: str) -> dict[str, object]:
    """The constant columns of a variant's states rows (see :func:`schemas`)."""
    return {
        "variant": variant,
        "objective": rules.objective,
        "maximise": rules.objective != "score",
        "residual": 0.0,
    }
