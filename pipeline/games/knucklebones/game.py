"""Knucklebones (as played in Cult of the Lamb): rules, canonical positions and the game graph.

Each player has ``columns`` columns of ``rows`` slots. The player to move rolls one die of
``faces`` faces and places it in one of their columns that is not full. A value ``v`` appearing
``c`` times in one column scores ``v * c * c``. Placing ``v`` in column ``i`` removes every ``v``
from the opponent's column ``i``. The game ends as soon as either board is full (checked after
the removals); the higher total wins, equal totals draw.

Canonical form. The order of dice inside a column does not matter (a column is a multiset), a
value never stands in both columns of a facing pair (placing it removed the other), and the
column pairs may be permuted together. So a column is one of ``C(faces + rows, rows)`` multisets,
a facing pair one of the pairs of multisets with disjoint values, and a position -- always written
from the view of the player to move, their board first -- a multiset of ``columns`` pairs. The
canonical state id is the colex rank of that multiset: the ids are exactly
``0 .. C(pairs + columns - 1, columns) - 1``, so a state's id is also its index in the graph.
That numbering and the reader of a written position are stated once, in plain Python, in
:mod:`pipeline.games.knucklebones.numbering`; the tables here are built from it.

Graph. A state is a position before the roll. Its chance rows are the die faces (one choice);
a decision node is (state, face) and its moves are the distinct column pairs that can take the
die (move label = the column's index in canonical order). The successor is the position seen by
the opponent, so each move's value is ``1 - V`` (win probability, a draw counts 1/2) or ``-V``
(expected final score difference). Removals make positions repeat: the graph has cycles and is
solved by value iteration (``Graph.cyclic``).
"""

from __future__ import annotations

from functools import cached_property
from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.base import Game

# the rules as data, the numbering of positions and the board readers live in plain Python in
# numbering.py (read there without numpy by a one-shot `expect`); the game's tables are built
# from that numbering
from pipeline.games.knucklebones.numbering import (
    EMPTY_COLUMN,
    KnuckleRules,
    Numbering,
    column_order,
    pair_order,
)
from pipeline.graph import Graph

if TYPE_CHECKING:
    import polars as pl

#: Above this many move rows the graph's index arrays are int32 (and skip_edges is set).
BIG_GRAPH_MOVES = 20_000_000
#: Larger games are not built as one graph here (the full 3x3 game: see the README design note).
MAX_GRAPH_STATES = 50_000_000


def board_name(rules: KnuckleRules) -> str:
    """A board and die as the artefacts' files name them: ``3x3-d6``."""
    return f"{rules.columns}x{rules.rows}-d{rules.faces}"


def board_game(rules: KnuckleRules) -> Knucklebones:
    """The game of ``rules``' board and die, its objective the win chance: the board the
    players play, the search values and the artefacts label (both objectives)."""
    return Knucklebones(KnuckleRules(rules.columns, rules.rows, rules.faces))


class PairTables:
    """Columns, facing pairs and the per-pair lookup tables of one board shape and die."""

    def __init__(self, rows: int, faces: int) -> None:
        self.rows, self.faces = rows, faces
        self.col_counts = enumerate_columns(rows, faces)
        n_col = self.col_counts.shape[0]
        base = (rows + 1) ** np.arange(faces)
        self.col_code = self.col_counts @ base
        lookup = np.full((rows + 1) ** faces, -1, dtype=np.int64)
        lookup[self.col_code] = np.arange(n_col)
        self.col_size = self.col_counts.sum(axis=1)
        values = np.arange(1, faces + 1)
        self.col_score = (self.col_counts**2) @ values
        # the pairs in numbering.pair_order's order (pair 0 is empty)
        pairs = np.array(pair_order(rows, faces), dtype=np.int64).reshape(-1, 2)
        self.pair_mover, self.pair_opp = pairs[:, 0].copy(), pairs[:, 1].copy()
        n_pair = self.pair_mover.shape[0]
        pair_of = np.full((n_col, n_col), -1, dtype=np.int64)
        pair_of[self.pair_mover, self.pair_opp] = np.arange(n_pair)
        self.swap = pair_of[self.pair_opp, self.pair_mover]
        self.mover_size = self.col_size[self.pair_mover]
        self.opp_size = self.col_size[self.pair_opp]
        self.mover_score = self.col_score[self.pair_mover]
        self.opp_score = self.col_score[self.pair_opp]
        # place[p, v - 1]: the pair after the mover puts v in the column (-1 when it is full).
        self.place = np.full((n_pair, faces), -1, dtype=np.int64)
        for v in range(faces):
            mover = self.col_counts[self.pair_mover].copy()
            opp = self.col_counts[self.pair_opp].copy()
            ok = self.mover_size < rows
            mover[:, v] += 1
            opp[:, v] = 0
            new = pair_of[lookup[np.where(ok, mover @ base, 0)], lookup[opp @ base]]
            self.place[:, v] = np.where(ok, new, -1)
        # moved[p, v - 1]: that pair seen by the opponent, who moves next (-1: full). A move is
        # "every pair turned (swap), the played column's pair moved": Knucklebones.play and the
        # compiled rules (rules.move_pair, rules.turned_after) read it so.
        self.moved = np.where(self.place >= 0, self.swap[self.place], -1)

    @property
    def n_pairs(self) -> int:
        """Number of facing pairs (two columns sharing no value)."""
        return int(self.pair_mover.shape[0])

    def column_text(self, col: int) -> str:
        """A column's dice in increasing order ("144"), or "_" when empty."""
        return self._texts[col]

    @cached_property
    def _texts(self) -> list[str]:
        # every column's text made once: a position's answer writes a dozen boards
        return [
            "".join(str(v + 1) * int(c) for v, c in enumerate(counts)) or EMPTY_COLUMN
            for counts in self.col_counts.tolist()
        ]


def enumerate_columns(rows: int, faces: int) -> np.ndarray:
    """Every column (multiset of at most ``rows`` dice) as counts per face, by size then value
    (:func:`pipeline.games.knucklebones.numbering.column_order` as an array)."""
    return np.array(column_order(rows, faces), dtype=np.int64).reshape(-1, faces)


def n_positions(n_pairs: int, columns: int) -> int:
    """Canonical positions: multisets of ``columns`` facing pairs."""
    return comb(n_pairs + columns - 1, columns)


def binomials(n: int, k: int) -> np.ndarray:
    """Table ``b[i, j] = C(i, j)`` for ``i <= n``, ``j <= k`` (int64; 0 where ``j > i``)."""
    return np.array([[comb(i, j) for j in range(k + 1)] for i in range(n + 1)], dtype=np.int64)


def rank_multisets(sorted_pairs: np.ndarray, binom: np.ndarray) -> np.ndarray:
    """Colex rank of each row of nondecreasing pair indices (the canonical state id):
    :func:`pipeline.games.knucklebones.numbering.rank` over many rows at once."""
    rank = np.zeros(sorted_pairs.shape[0], dtype=np.int64)
    for i in range(sorted_pairs.shape[1]):
        rank += binom[sorted_pairs[:, i].astype(np.int64) + i, i + 1]
    return rank


def all_multisets(n_pairs: int, columns: int) -> np.ndarray:
    """Every multiset of ``columns`` pair indices as sorted rows, in colex (= state id) order."""
    dtype = np.int16 if n_pairs < 2**15 else np.int32
    rows = np.arange(n_pairs, dtype=dtype)[:, None]
    for k in range(2, columns + 1):
        # Multisets of size k with largest element m: every size-(k-1) multiset whose largest
        # is <= m (the first C(m + k - 1, k - 1) rows in colex order), then m.
        sizes = [comb(m + k - 1, k - 1) for m in range(n_pairs)]
        prefix = np.concatenate([rows[:s] for s in sizes])
        last = np.repeat(np.arange(n_pairs, dtype=dtype), sizes)
        rows = np.concatenate([prefix, last[:, None]], axis=1)
    return rows


class Knucklebones(Game):
    """The two-player game for a :class:`KnuckleRules`, solved from the mover's point of view."""

    cyclic = True  # a removed die can bring a position back

    def __init__(self, rules: KnuckleRules) -> None:
        self.r = rules
        self.objective = rules.objective
        self.t = PairTables(rules.rows, rules.faces)
        #: the numbering and the reader of positions (plain Python, the tables' own order)
        self.numbering = Numbering(rules)
        self.binom = binomials(self.t.n_pairs + rules.columns, rules.columns)
        moves = self.n_states * rules.faces * rules.columns
        self.skip_edges = moves > BIG_GRAPH_MOVES

    @property
    def n_states(self) -> int:
        """Number of canonical positions."""
        return n_positions(self.t.n_pairs, self.r.columns)

    def rules(self) -> dict[str, Any]:
        """The rules as plain data."""
        return self.r.to_dict()

    def start_state(self) -> int:
        """Both boards empty (every pair is pair 0, rank 0)."""
        return 0

    def choice_name(self) -> str:
        """One die is always rolled."""
        return "dice"

    # -- positions ---------------------------------------------------------------------------

    @cached_property
    def positions(self) -> np.ndarray:
        """[S, columns] pair indices of every state, in state id order."""
        return all_multisets(self.t.n_pairs, self.r.columns)

    def canonical(self, pairs: np.ndarray) -> np.ndarray:
        """State ids of rows of pair indices in any column order."""
        return rank_multisets(np.sort(pairs, axis=1), self.binom)

    def scores(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mover's and opponent's totals of each row of pair indices."""
        return self.t.mover_score[pairs].sum(1), self.t.opp_score[pairs].sum(1)

    def terminal_mask(self, pairs: np.ndarray) -> np.ndarray:
        """Whether either board is full."""
        full = self.r.slots
        return (self.t.mover_size[pairs].sum(1) == full) | (self.t.opp_size[pairs].sum(1) == full)

    def final_values(self, pairs: np.ndarray) -> np.ndarray:
        """Value of ending the game in each position, for the player to move there."""
        mine, theirs = self.scores(pairs)
        diff = (mine - theirs).astype(np.float64)
        if self.r.objective == "score":
            return diff
        return 0.5 + 0.5 * np.sign(diff)

    # -- moves -------------------------------------------------------------------------------
    # The one statement of a move on boards in play (real column order, the mover's view; the
    # canonical, sorted form is the compiled kernels' in rules.py, from the same tables).

    def legal_columns(self, pairs: np.ndarray) -> np.ndarray:
        """The mover's columns (0-based, the board's own order) that are not full: where any
        die may go."""
        return np.flatnonzero(self.t.mover_size[pairs] < self.r.rows)

    def play(self, pairs: np.ndarray, column: int, die: int) -> np.ndarray:
        """The position after the mover places ``die`` in ``column`` (0-based): the die joins
        the mover's column, the opponent's dice of that value in the facing column are removed,
        and the board is turned to the other player, who moves next (the result is from their
        view; the column order is kept).

        ``pairs`` is one position (``[columns]``) or many (``[n, columns]``, the same column
        and die for each). ValueError where the column is full.
        """
        pairs = np.asarray(pairs)
        moved = self.t.moved[pairs[..., column], die - 1]
        if np.any(moved < 0):
            raise ValueError(f"column {column + 1} is full")
        # in the positions' own integer type (the graph's are int16 or int32: a quarter of the
        # memory of int64 for tens of millions of rows)
        after = self.t.swap.astype(pairs.dtype, copy=False)[pairs]
        after[..., column] = moved
        return after

    def successors(self, pairs: np.ndarray, die: int) -> list[tuple[int, np.ndarray]]:
        """Every legal column (0-based) for ``die`` and the position it leads to (seen by the
        opponent, see :meth:`play`), in column order."""
        return [(int(c), self.play(pairs, int(c), die)) for c in self.legal_columns(pairs)]

    def finished(self, pairs: np.ndarray) -> bool:
        """Whether the game is over in one position: a board is full."""
        return bool(self.terminal_mask(np.asarray(pairs)[None, :])[0])

    def state_of(self, pairs: np.ndarray) -> int:
        """The canonical state id of one position (its columns in any order)."""
        return int(self.canonical(np.asarray(pairs)[None, :])[0])

    # -- graph -------------------------------------------------------------------------------

    def graph(self) -> Graph:
        """The game graph over every canonical position."""
        if self.n_states > MAX_GRAPH_STATES:
            raise UsageError(
                f"{self.n_states:,} positions are too many to solve in one process here; use "
                "`stb-pipeline knucklebones solve` (search) or see the README's design note"
            )
        pos = self.positions
        n, f, c = pos.shape[0], self.r.faces, self.r.columns
        big = n * f * c > BIG_GRAPH_MOVES
        idx = np.int32 if big else np.int64
        term = self.terminal_mask(pos)
        terminal = np.full(n, np.nan)
        terminal[term] = self.final_values(pos[term])
        live = np.flatnonzero(~term).astype(idx)
        n_nodes = live.shape[0] * f
        mv_node, mv_dst, mv_label = self._moves(pos, live, idx)
        # Chance rows and decision nodes are one-to-one here: one array serves both.
        node_state = np.repeat(live, f)
        node = np.arange(n_nodes, dtype=idx)
        dice = self.t.mover_size[pos].sum(1) + self.t.opp_size[pos].sum(1)
        win = self.r.objective == "wins"
        m = mv_node.shape[0]
        return Graph(
            state_id=np.arange(n, dtype=np.int64),
            rank=(2 * self.r.slots - dice).astype(np.int64),
            terminal=terminal,
            ch_state=node_state,
            ch_choice=np.broadcast_to(np.int64(1), (n_nodes,)),
            ch_count=np.broadcast_to(np.int64(1), (n_nodes,)),
            ch_denom=np.broadcast_to(np.int64(f), (n_nodes,)),
            ch_node=node,
            node_state=node_state,
            node_roll=np.tile(np.arange(1, f + 1, dtype=np.int8), live.shape[0]),
            mv_node=mv_node,
            mv_dst=mv_dst,
            mv_scale=np.broadcast_to(-1.0, (m,)),
            mv_offset=np.broadcast_to(1.0 if win else 0.0, (m,)),
            mv_label=mv_label,
            maximise=True,
            cyclic=True,
            meta={"edges_skipped": self.skip_edges},
        )

    def _moves(
        self, pos: np.ndarray, live: np.ndarray, idx: type
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every distinct move as (node, successor state, column label), sorted by (node, label);
        node ``i * faces + v - 1`` is live state ``i`` with die ``v``.

        Written straight into place (count the moves of each node, then fill each node's rows in
        label order) rather than concatenated and sorted: for tens of millions of positions the
        sort's index arrays would double the memory of the move arrays.
        """
        lp = pos[live]
        f, c = self.r.faces, self.r.columns
        n_live = lp.shape[0]

        def movable(j: int, v: int) -> np.ndarray:
            # Equal pairs are interchangeable: only the first of a run of equal pairs moves.
            ok = self.t.place[lp[:, j], v] >= 0
            return ok if j == 0 else ok & (lp[:, j] != lp[:, j - 1])

        per_node = np.zeros((n_live, f), dtype=np.int8)
        for j in range(c):
            for v in range(f):
                per_node[:, v] += movable(j, v)
        per_node = per_node.reshape(-1)
        starts = np.zeros(per_node.shape[0] + 1, dtype=np.int64)
        np.cumsum(per_node, out=starts[1:])
        node = np.repeat(np.arange(per_node.shape[0], dtype=idx), per_node)
        del per_node
        dst: np.ndarray = np.empty(node.shape[0], dtype=idx)
        label = np.empty(node.shape[0], dtype=np.int8)
        filled = np.zeros(starts.shape[0] - 1, dtype=np.int8)
        for j in range(c):  # labels ascending, so each node's rows end up in label order
            for v in range(f):
                ok = np.flatnonzero(movable(j, v))
                at_node = ok * f + v
                at = starts[at_node] + filled[at_node]
                filled[at_node] += 1
                dst[at] = self.canonical(self.play(lp[ok], j, v + 1))
                label[at] = j
        return node, dst, label

    # -- description -------------------------------------------------------------------------

    def board_text(self, pairs: np.ndarray) -> str:
        """One position as "mover;opponent", each board its columns joined by "/"."""
        mover = "/".join(self.t.column_text(int(self.t.pair_mover[p])) for p in pairs)
        opp = "/".join(self.t.column_text(int(self.t.pair_opp[p])) for p in pairs)
        return f"{mover};{opp}"

    def board_texts(self, pos: np.ndarray) -> pl.Series:
        """The ``tiles`` text ("mover;opponent", see :meth:`board_text`) of rows of sorted pair
        indices."""
        import polars as pl  # the graph build's frames only: the solvers run without it

        # Text per facing pair, gathered natively by polars (no Python object per row).
        sides = []
        for cols in (self.t.pair_mover, self.t.pair_opp):
            text = pl.Series([self.t.column_text(i) for i in cols], dtype=pl.String)
            rows = [text.gather(pos[:, j]) for j in range(self.r.columns)]
            sides.append(pl.concat_str(rows, separator="/"))
        return pl.select(tiles=pl.concat_str(sides, separator=";"))["tiles"]

    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Columns tiles (the position as text), n_open, score and both players' totals."""
        import polars as pl  # the graph build's frames only: the solvers run without it

        pos = self.positions[state_id]
        mine, theirs = self.scores(pos)
        empty = 2 * self.r.slots - self.t.mover_size[pos].sum(1) - self.t.opp_size[pos].sum(1)
        return pl.DataFrame(
            {
                "tiles": self.board_texts(pos),
                "n_open": pl.Series(empty.astype(np.int16)),
                "score": pl.Series((mine - theirs).astype(np.int64)),
                "mover_score": pl.Series(mine.astype(np.int32)),
                "opponent_score": pl.Series(theirs.astype(np.int32)),
            }
        )

    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """A move as the list holding its column number (1-based, canonical order)."""
        import polars as pl  # the graph build's frames only: the solvers run without it

        lab = label.astype(np.int64)
        col = pl.Series(np.where(lab >= 0, lab + 1, 0), dtype=pl.Int8)
        frame = pl.DataFrame({"ok": lab >= 0, "col": col})
        return frame.select(
            move=pl.when("ok").then(pl.concat_list(pl.col("col"))),
        )["move"]

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of a position written "mover;opponent" (:meth:`Numbering.parse_state`)."""
        return self.numbering.parse_state(text, **extra)

    def pairs_of_boards(self, mine: list[list[int]], theirs: list[list[int]]) -> np.ndarray:
        """Pair indices of two boards given column by column; UsageError if a pair is impossible."""
        return np.array(self.numbering.pairs_of_boards(mine, theirs), dtype=np.int64)
