"""Double Shutter ("Shut the Super Box"): Shut the Box with a second row of tiles behind the first.

Layout: ``columns`` columns. Column i holds front tile i and, with a back row, the back tile
``columns + 1 - i`` behind it (the back row is numbered in reverse, as in the box that reproduces
the Double Shutter article's numbers; ``back_reversed=False`` puts back tile i behind front
tile i). A back tile can be shut once the front tile in front of it is down, or in the same
move. A move shuts a set of
currently shuttable tiles whose face values sum to the roll. When the player is stuck the score is
``front_weight`` x (standing front tiles) + ``back_weight`` x (standing back tiles).

State: one digit per column, the number of tiles down in it: 0 = both up, 1 = front down and
back up, 2 = both down (without a back row: 0 = up, 1 = down). The ``state`` string lists the
digits column 1 first; the canonical ``state_id`` is that string read as a base-3 number, so
column 1 is the most significant digit, the full box is 0 and the shut 9-column box is 3**9 - 1.

Tiles in lists (``open_tiles``, moves) are signed: front tile t is ``t``, back tile t is ``-t``.
A move label is ``sum(2**(columns + t - 1) for front tiles t) + sum(2**(t - 1) for back tiles t)``,
so "prefer the largest label" breaks ties towards the move holding the highest front tile where
two moves differ, then the highest back tile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.games.base import Game, LegalMoves, Stuck
from pipeline.games.dice import (
    MoveColumns,
    chance_columns,
    chances,
    dice_choices,
    roll_distribution,
    roll_grid,
)
from pipeline.games.double_shutter.rules import DoubleShutterRules  # (the family's face)
from pipeline.games.shutbox.hooks import TileStrategyHooks
from pipeline.graph import NO_STATE, PASS, Graph

if TYPE_CHECKING:  # polars, pyarrow and the batch solver (numba) load where they are used:
    # an answer from the tables needs the rules alone
    import polars as pl

    from pipeline.solve.batch import BatchSolution
    from pipeline.solve.rank_order import Solution

# What a move does to one column: shut its front tile, both tiles, or the back tile alone.
FRONT, BOTH, BACK = "front", "both", "back"
#: The digit the column must have for each, and how far the move advances it.
NEEDS = {FRONT: 0, BOTH: 0, BACK: 1}
STEPS = {FRONT: 1, BOTH: 2, BACK: 1}


class DoubleShutter(TileStrategyHooks, Game):
    """The one-player Double Shutter game for a :class:`DoubleShutterRules`.

    ``thresholds``: the targets n for which the summary reports p(n) = 1 - max P(score <= n).
    """

    def __init__(self, rules: DoubleShutterRules, thresholds: Sequence[int] = ()) -> None:
        self.r = rules
        self.objective = rules.objective
        self.thresholds = tuple(thresholds)
        n = rules.columns
        self.front = np.array(rules.front_tiles(), dtype=np.int64)
        self.back = np.array(rules.back_tiles(), dtype=np.int64)
        self.place = np.array(rules.places(), dtype=np.int64)
        """Base-3 place value of each column's digit (column 1 most significant)."""
        self._all = all_states(n, rules.rows)

    def rules(self) -> dict[str, Any]:
        """The rule set as plain data, with the targets of the summary's p(n) family."""
        return {**self.r.to_dict(), "summary_targets": list(self.thresholds)}

    def start_state(self) -> int:
        """Every tile standing: all digits 0."""
        return 0

    @property
    def shut_state(self) -> int:
        """State id with every tile down."""
        return int(self.r.rows * self.place.sum())

    # -- rules -------------------------------------------------------------------------------

    def digits(self, ids: np.ndarray) -> np.ndarray:
        """int64 [len(ids), columns]: tiles down per column, column 1 first."""
        return (np.asarray(ids, dtype=np.int64)[:, None] // self.place[None, :]) % 3

    def standing(self, ids: np.ndarray) -> np.ndarray:
        """Number of tiles standing in each state."""
        return (self.r.rows - self.digits(ids)).sum(axis=1)

    def exposed_sums(self, ids: np.ndarray) -> np.ndarray:
        """Sum of the tiles that can be shut now: standing front tiles, and back tiles whose
        front tile is down."""
        d = self.digits(ids)
        back = self.back if self.r.back_row else np.zeros_like(self.back)
        return np.where(d == 0, self.front, np.where(d == 1, back, 0)).sum(axis=1)

    def scores(self, ids: np.ndarray) -> np.ndarray:
        """Final score of each state if the player is stuck there."""
        d = self.digits(ids)
        front_up = d == 0
        back_up = (d <= 1) if self.r.back_row else np.zeros_like(front_up)
        return (self.r.front_weight * front_up * self.front).sum(axis=1) + (
            self.r.back_weight * back_up * self.back
        ).sum(axis=1)

    def stuck_values(self, ids: np.ndarray) -> np.ndarray:
        """Value of ending the game in each state (the objective applied to its score)."""
        return objective_values(self.scores(ids), self.r.objective, self.r.target)

    def tile_view(self, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        """For move strategies (`pipeline.games.shutbox.strategies`): the face value of each bit
        of a move label (back tiles 1..n, then front tiles 1..n) and each state's final score."""
        values = np.arange(1, self.r.columns + 1, dtype=np.int64)
        return np.concatenate((values, values)), self.scores(g.state_id).astype(np.float64)

    def dice_available(self, ids: np.ndarray) -> dict[int, np.ndarray]:
        """For each number of dice, whether it may be rolled in each state (none when shut)."""
        alive = self.standing(ids) > 0
        if self.r.one_die == "never":
            return {self.r.dice: alive}
        cond = self.exposed_sums(ids) <= self.r.one_die_sum
        if self.r.one_die == "forced":
            return {1: alive & cond, self.r.dice: alive & ~cond}
        return {1: alive & cond, self.r.dice: alive}

    def tile_sets(self, max_sum: int) -> list[tuple[dict[int, str], int, int]]:
        """Every set of tiles a move could shut, as ({column index: FRONT, BOTH or BACK}, sum,
        label), with sum at most ``max_sum``."""
        n, out = self.r.columns, []
        options = (FRONT, BOTH, BACK) if self.r.back_row else (FRONT,)

        def extend(col: int, chosen: dict[int, str], total: int, label: int) -> None:
            for c in range(col, n):
                front, back = int(self.front[c]), int(self.back[c])
                for what in options:
                    value, lab = total, label
                    if what in (FRONT, BOTH):
                        value, lab = value + front, lab | 1 << (n + front - 1)
                    if what in (BOTH, BACK):
                        value, lab = value + back, lab | 1 << (back - 1)
                    if value > max_sum:
                        continue
                    now = {**chosen, c: what}
                    out.append((now, value, lab))
                    extend(c + 1, now, value, lab)

        extend(0, {}, 0, 0)
        return out

    def graph(self) -> Graph:
        """The game graph over every state of the box."""
        ids = self._all
        top = self.r.dice * self.r.sides
        avail = self.dice_available(ids)
        dists = {d: roll_distribution(d, self.r.sides) for d in avail}
        moves = self._moves(ids, top)
        terminal = np.full(ids.shape[0], np.nan)
        shut = np.flatnonzero(ids == self.shut_state)
        terminal[shut] = self.stuck_values(ids[shut])
        return assemble_graph(
            ids,
            rank=self.standing(ids),
            terminal=terminal,
            avail=avail,
            dists=dists,
            moves=moves,
            stuck_value=self.stuck_values,
            maximise=self.r.objective != "score",
        )

    def _moves(self, ids: np.ndarray, top: int) -> list[tuple[np.ndarray, np.ndarray, int, int]]:
        """Every legal move as (state indices, successor ids, roll, label), one vector pass per
        set of tiles."""
        d = self.digits(ids)
        eq = {(c, v): d[:, c] == v for c in range(self.r.columns) for v in (0, 1)}
        out = []
        for chosen, total, label in self.tile_sets(top):
            ok = np.ones(ids.shape[0], dtype=bool)
            delta = 0
            for c, what in chosen.items():
                ok &= eq[(c, NEEDS[what])]
                delta += STEPS[what] * int(self.place[c])
            idx = np.flatnonzero(ok)
            out.append((idx, ids[idx] + delta, total, label))
        return out

    # -- answers (pipeline.answer): one state's moves from arrays of every set of tiles ------

    @cached_property
    def _columns(self) -> tuple[list[int], list[int], list[int]]:
        """Each column's place value, front tile and back tile as Python ints: the one-state
        answers below loop over them (a numpy scalar a column cost more than the work)."""
        return self.place.tolist(), self.front.tolist(), self.back.tolist()

    def state_digits(self, state_id: int) -> list[int]:
        """The digit of each column (tiles down), column 1 first."""
        return [(state_id // p) % 3 for p in self._columns[0]]

    def dice_allowed(self, state_id: int) -> list[int]:
        """:meth:`dice_available` of one state in plain Python, fewest dice first."""
        r = self.r
        digits = self.state_digits(state_id)
        if all(d == r.rows for d in digits):  # every tile down
            return []
        _, front, back = self._columns
        exposed = sum(
            front[c] if d == 0 else back[c] if d == 1 and r.back_row else 0
            for c, d in enumerate(digits)
        )
        return dice_choices(r.one_die, r.dice, exposed <= r.one_die_sum)

    def roll_chances(self, state_id: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        """The dice the rules allow (fewest first) and the totals each can roll."""
        return chances(self.dice_allowed(state_id), self.r.sides)

    def legal_moves(self, state_id: int, rolls: Sequence[int]) -> LegalMoves:
        """The sets of shuttable tiles adding up to each roll (``rolls`` increasing; the largest
        label first within a roll)."""
        sets = self._candidates(tuple(int(r) for r in rolls))
        digits = self.state_digits(state_id)
        up = sum(1 << c for c, d in enumerate(digits) if d == 0)  # front tile standing
        back = sum(1 << c for c, d in enumerate(digits) if d == 1)  # only the back one
        ok = ((sets["need_up"] & ~up) == 0) & ((sets["need_back"] & ~back) == 0)
        return LegalMoves(sets["total"][ok], sets["label"][ok], state_id + sets["delta"][ok])

    def _candidates(self, rolls: tuple[int, ...]) -> dict[str, np.ndarray]:
        """:attr:`_answer_sets` of the given totals (cached per tuple of rolls)."""
        cache: dict[tuple[int, ...], dict[str, np.ndarray]] = self.__dict__.setdefault(
            "_candidate_cache", {}
        )
        found = cache.get(rolls)
        if found is None:
            sets = self._answer_sets
            keep = np.isin(sets["total"], rolls)
            found = cache[rolls] = {name: column[keep] for name, column in sets.items()}
        return found

    @cached_property
    def _answer_sets(self) -> dict[str, np.ndarray]:
        """Every set of tiles a move could shut (:meth:`tile_sets`), by total and the largest
        label first within one: the columns whose front tile it needs standing, those whose
        back tile alone it needs, how much it adds to a state id, its total and label."""
        found = sorted(self.tile_sets(self.r.dice * self.r.sides), key=lambda t: (t[1], -t[2]))
        up, back, delta, total, label = [], [], [], [], []
        for chosen, value, lab in found:
            up.append(sum(1 << c for c, what in chosen.items() if NEEDS[what] == 0))
            back.append(sum(1 << c for c, what in chosen.items() if NEEDS[what] == 1))
            delta.append(sum(STEPS[what] * int(self.place[c]) for c, what in chosen.items()))
            total.append(value)
            label.append(lab)
        return {
            name: np.array(values, dtype=np.int64)
            for name, values in (
                ("need_up", up), ("need_back", back), ("delta", delta), ("total", total),
                ("label", label),
            )
        }  # fmt: skip

    def move_tiles(self, label: int) -> list[int]:
        """A move label as its signed tiles: front tiles t, then back tiles as -t."""
        n = self.r.columns
        front = [t for t in range(1, n + 1) if label >> (n + t - 1) & 1]
        return front + [-t for t in range(1, n + 1) if label >> (t - 1) & 1]

    def state_text(self, state_id: int) -> str:
        """The standing tiles as the tables write them ("front=1234 back=98")."""
        if state_id == self.shut_state:
            return ""
        digits = self.state_digits(state_id)
        _, fronts, backs = self._columns
        front = "".join(str(t) for t, d in zip(fronts, digits, strict=True) if d == 0) or "-"
        if not self.r.back_row:
            return f"front={front}"
        standing = sorted(t for t, d in zip(backs, digits, strict=True) if d <= 1)
        return f"front={front} back={''.join(map(str, standing)) or '-'}"

    def state_code(self, state_id: int) -> str:
        """The digits of the ``state`` column ("000000012")."""
        return "".join(map(str, self.state_digits(state_id)))

    def stuck(self, state_id: int) -> Stuck:
        """Stuck, the game ends with the standing tiles' score: :meth:`stuck_values` of one
        state in plain Python (the numpy form costs ten times more on one state)."""
        r = self.r
        _, fronts, backs = self._columns
        digits = self.state_digits(state_id)
        score = r.front_weight * sum(t for t, d in zip(fronts, digits, strict=True) if d == 0)
        if r.back_row:
            score += r.back_weight * sum(t for t, d in zip(backs, digits, strict=True) if d <= 1)
        if r.objective == "score":
            return Stuck("end", None, float(score))
        limit = 0 if r.objective == "shut" else int(r.target or 0)
        return Stuck("end", None, float(score <= limit))

    # -- the threshold family and the summary -------------------------------------------------

    def threshold_family(self, g: Graph, targets: Sequence[int]) -> BatchSolution:
        """Solve graph ``g`` of this box for every objective "maximise P(final score <= n)", n in
        ``targets``, at once (column k of the result belongs to ``targets[k]``)."""
        from pipeline.solve.batch import solve_rank_order_batch

        limits = np.asarray(targets, dtype=np.int64)
        score = self.scores(g.state_id)
        meets = (score[:, None] <= limits[None, :]).astype(np.float64)
        terminal = np.where(np.isnan(g.terminal)[:, None], np.nan, meets)
        # a pass ends the game where it is: worth 1 when the score there meets the target
        return solve_rank_order_batch(replace(g, maximise=True), terminal, meets)

    def summary(self, g: Graph, solution: Solution) -> pl.DataFrame:
        """Headline figures: the value at the start under this box's objective (expected score,
        or P(score != 0), or P(score > target)), and p(n) for each of ``self.thresholds``."""
        import polars as pl

        start = int(np.flatnonzero(g.state_id == self.start_state())[0])
        value = float(solution.value[start])
        figure = {"score": "min_expected_score", "shut": "p_not_zero", "target": "p_above"}
        rows = [
            (
                figure[self.r.objective],
                self.r.objective,
                self.r.target,
                value if self.r.objective == "score" else 1.0 - value,
            )
        ]
        if self.thresholds:
            family = self.threshold_family(g, self.thresholds)
            rows += [
                ("p_above", "target", n, 1.0 - float(family.value[start, k]))
                for k, n in enumerate(self.thresholds)
            ]
        return pl.DataFrame(
            rows,
            schema={
                "figure": pl.String,
                "objective": pl.String,
                "parameter": pl.Int32,
                "value": pl.Float64,
            },
            orient="row",
        )

    # -- description -------------------------------------------------------------------------

    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Columns state, tiles, front_tiles, back_tiles, open_tiles, n_open, open_sum,
        exposed_sum, score for each state id."""
        import polars as pl

        ids = np.asarray(state_id, dtype=np.int64)
        d = self.digits(ids)
        by_value = np.argsort(self.back)
        front_up = d == 0  # columns are front tiles 1..n in order
        back_up = ((d <= 1) & self.r.back_row)[:, by_value]  # reordered: back tiles 1..n
        values = np.arange(1, self.r.columns + 1, dtype=np.int8)
        state = np.full(ids.shape[0], "", dtype=f"<U{self.r.columns}")
        for c in range(self.r.columns):
            state = np.char.add(state, d[:, c].astype("<U1"))
        return pl.DataFrame(
            {
                "state": state,
                "tiles": np.where(ids == self.shut_state, "", self._tiles_text(d)),
                "front_tiles": _lists(front_up, values),
                "back_tiles": _lists(back_up, values),
                "open_tiles": _lists(
                    np.hstack((front_up, back_up)), np.concatenate((values, -values))
                ),
                "n_open": self.standing(ids).astype(np.int16),
                "open_sum": (front_up * values).sum(axis=1, dtype=np.int32)
                + (back_up * values).sum(axis=1, dtype=np.int32),
                "exposed_sum": self.exposed_sums(ids).astype(np.int32),
                "score": self.scores(ids),
            }
        )

    def _tiles_text(self, d: np.ndarray) -> np.ndarray:
        """The ``tiles`` rendering of states given by their digits: "front=1234 back=98"
        ("front=1234" without a back row)."""
        cols = range(self.r.columns)
        front = np.char.add("front=", _row_text({int(self.front[c]): d[:, c] == 0 for c in cols}))
        if not self.r.back_row:
            return front
        back = _row_text({int(self.back[c]): d[:, c] <= 1 for c in cols})
        return np.char.add(np.char.add(front, " back="), back)

    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """Each move label as its signed tiles: front tiles t, then back tiles as -t (null for a
        pass)."""
        import polars as pl

        from pipeline.games.columns import describe_distinct

        def lists(found: np.ndarray) -> pl.Series:
            signed = [None if lab < 0 else self.move_tiles(lab) for lab in found.tolist()]
            return pl.Series("move", signed, dtype=pl.List(pl.Int8))

        return describe_distinct(np.asarray(label, dtype=np.int64), lists)

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of a state as the user writes it (:meth:`DoubleShutterRules.parse_state`)."""
        return self.r.parse_state(text, **extra)


def _lists(mask: np.ndarray, values: np.ndarray) -> pl.Series:
    """Per row of ``mask`` [rows, k], the ``values`` [k] where it is true, as a list column."""
    import polars as pl
    import pyarrow as pa

    _, cols = np.nonzero(mask)  # row-major: each row's values in order
    offsets = np.concatenate(([0], np.cumsum(mask.sum(axis=1)))).astype(np.int32)
    array = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[cols]))
    return pl.Series(array)


def _row_text(up: dict[int, np.ndarray]) -> np.ndarray:
    """The standing tiles of one row as digit strings ("1234"; "-" when none), per state."""
    text = np.full(next(iter(up.values())).shape[0], "", dtype="<U9")
    for t in sorted(up):
        text = np.char.add(text, np.where(up[t], str(t), ""))
    return np.where(text == "", "-", text)


def all_states(columns: int, rows: int) -> np.ndarray:
    """Every state id (digits 0..rows per column, base 3), in increasing order."""
    ids = np.zeros(1, dtype=np.int64)
    for _ in range(columns):
        ids = (ids[:, None] * 3 + np.arange(rows + 1, dtype=np.int64)[None, :]).ravel()
    return ids


def objective_values(score: np.ndarray, objective: str, target: int | None) -> np.ndarray:
    """Value of finishing with each score: the score itself, or whether it meets the goal."""
    score = np.asarray(score)
    if objective == "score":
        return score.astype(np.float64)
    limit = 0 if objective == "shut" else int(target or 0)
    return (score <= limit).astype(np.float64)


def assemble_graph(
    ids: np.ndarray,
    *,
    rank: np.ndarray,
    terminal: np.ndarray,
    avail: dict[int, np.ndarray],
    dists: dict[int, list[tuple[int, int, int]]],
    moves: list[tuple[np.ndarray, np.ndarray, int, int]],
    stuck_value: Callable[[np.ndarray], np.ndarray],
    maximise: bool,
) -> Graph:
    """A :class:`Graph` from the states (sorted ids), the dice each state may roll, and the
    legal moves as (state indices, successor ids, roll, label); a node without a legal move gets
    a pass row worth ``stuck_value(state ids)``."""
    roll_ok = roll_grid(ids.shape[0], avail, dists)
    width = roll_ok.shape[1]
    node_of = np.cumsum(roll_ok.ravel(), dtype=np.int64) - 1
    node_state, node_roll = np.nonzero(roll_ok)
    node, dst, label = _move_rows(ids, moves, roll_ok, node_of)
    mv = _with_passes(
        node, dst, label, node_state.shape[0], lambda stuck: stuck_value(ids[node_state[stuck]])
    )
    return Graph(
        state_id=ids,
        rank=np.asarray(rank, dtype=np.int64),
        terminal=terminal,
        **chance_columns(avail, dists, node_of, width),
        node_state=node_state.astype(np.int64),
        node_roll=node_roll.astype(np.int64),
        **mv,
        maximise=maximise,
    )


def _move_rows(
    ids: np.ndarray,
    moves: list[tuple[np.ndarray, np.ndarray, int, int]],
    roll_ok: np.ndarray,
    node_of: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node, successor index, label) of every legal move at a node that exists."""
    width = roll_ok.shape[1]
    empty = np.zeros(0, dtype=np.int64)
    mv_node, mv_dst, mv_label = [empty], [empty], [empty]
    for idx, dst, roll, label in moves:
        if roll >= width:
            continue
        keep = idx[roll_ok[idx, roll]]
        mv_node.append(node_of[keep * width + roll])
        mv_dst.append(np.searchsorted(ids, dst[roll_ok[idx, roll]]))
        mv_label.append(np.full(keep.shape[0], label, dtype=np.int64))
    return np.concatenate(mv_node), np.concatenate(mv_dst), np.concatenate(mv_label)


def _with_passes(
    node: np.ndarray,
    dst: np.ndarray,
    label: np.ndarray,
    n_nodes: int,
    pass_value: Callable[[np.ndarray], np.ndarray],
) -> MoveColumns:
    """The moves plus a pass row (no successor, scale 0, offset ``pass_value(nodes)``) at each
    node without a move, sorted by node (stable: moves keep their order)."""
    stuck = np.flatnonzero(np.bincount(node, minlength=n_nodes) == 0)
    n_moves = node.shape[0]
    all_node = np.concatenate((node, stuck))
    order = np.argsort(all_node, kind="stable")
    offset = np.concatenate((np.zeros(n_moves), pass_value(stuck)))
    return MoveColumns(
        mv_node=all_node[order],
        mv_dst=np.concatenate((dst, np.full(stuck.shape[0], NO_STATE)))[order],
        mv_scale=(order < n_moves).astype(np.float64),
        mv_offset=offset[order],
        mv_label=np.concatenate((label, np.full(stuck.shape[0], PASS)))[order],
    )
