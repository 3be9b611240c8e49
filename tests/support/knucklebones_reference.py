"""Knucklebones from its rules alone: an independent solver for cross-checking the tables.

Written from the game's description (the Rust Knucklebones solver's rules and Cult of the Lamb's,
as gathered in the seeds' README), sharing no code with ``pipeline``:

- each player has ``columns`` columns of ``rows`` slots; the player to move rolls one die of
  ``faces`` faces and puts it in one of their columns that has room;
- a value ``v`` that stands ``c`` times in one column scores ``v * c * c`` (doubles and triples);
- putting ``v`` in column ``i`` removes every ``v`` from the opponent's column ``i``;
- the game ends as soon as either board is full (after the removals); the higher total wins,
  equal totals draw.

A position is the two boards before the roll, the mover's first; the order of dice in a column
never matters (a column is its dice in increasing order), and permuting the columns of both
boards together changes nothing, so positions are keyed by their sorted facing columns. Two
objectives, both from the mover's view: ``wins`` (the chance of winning, a draw counting 1/2)
and ``score`` (the expected final difference, mover minus opponent). The opponent is the mover
at the next position and plays the same objective, so a placement is worth ``1 - V`` (or ``-V``)
of the position it leaves.

Removals make positions repeat (a die placed, then knocked out by the same value), so there is
no order to solve them in: values come from plain value iteration on two bounds. A lower and an
upper bound start at the extreme final values and are swept with the Bellman operator (the new
lower bound reads the successors' upper bounds: a placement's worth reverses the order) until
they are within ``tolerance``; the exact value lies between them. From any position some run of
dice ends the game whatever the players do (each player's dice never matching the other's), so
the bounds meet.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cache

import numpy as np

Column = tuple[int, ...]  # a column's dice, in increasing order
Board = tuple[Column, ...]  # columns, left to right
Key = tuple[tuple[Column, Column], ...]  # the facing columns (mover's, opponent's), sorted


def column_score(column: Column) -> int:
    """Each value times the square of its count: 4, 4 scores 16; 4, 4, 4 scores 36; 2, 5
    scores 7."""
    return sum(v * c * c for v, c in Counter(column).items())


@cache
def add(column: Column, die: int) -> Column:
    """The column with ``die`` put in it."""
    return tuple(sorted((*column, die)))


@cache
def knock_out(column: Column, die: int) -> Column:
    """The column with every ``die`` removed."""
    return tuple(d for d in column if d != die)


def parse_board(text: str) -> Board:
    """A board written as the tables write it: columns joined by ``/``, ``_`` when empty."""
    return tuple(
        () if col == "_" else tuple(sorted(int(ch) for ch in col)) for col in text.split("/")
    )


def parse_position(text: str) -> tuple[Board, Board]:
    """``MOVER;OPPONENT`` (the tables' ``tiles`` column) as two boards."""
    mover, opponent = text.split(";")
    return parse_board(mover), parse_board(opponent)


def key_of(mover: Board, opponent: Board) -> Key:
    """The position with its facing columns sorted (column order does not matter)."""
    return tuple(sorted(zip(mover, opponent, strict=True)))


def after(key: Key, j: int, die: int) -> Key:
    """The position after the mover puts ``die`` in facing pair ``j``: the die joins the
    mover's column, every ``die`` leaves the opponent's, and the opponent moves next (their
    board first)."""
    mine, theirs = key[j]
    rest = [(t, m) for i, (m, t) in enumerate(key) if i != j]
    return tuple(sorted([*rest, (knock_out(theirs, die), add(mine, die))]))


@dataclass
class Reference:
    """Every position reachable from the ones asked for, and their values under both
    objectives once solved."""

    columns: int
    rows: int
    faces: int
    tolerance: float = 1e-13
    #: a guard: the bounds of the boards tested here meet in a few thousand sweeps at most
    max_sweeps: int = 100_000
    index: dict[Key, int] = field(default_factory=dict)
    #: values by objective, in the order of ``index``; each within ``bound`` of the exact one
    values: dict[str, np.ndarray] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    sweeps: dict[str, int] = field(default_factory=dict)

    def empty(self) -> Key:
        """The start: both boards empty."""
        return tuple(((), ()) for _ in range(self.columns))

    def over(self, key: Key) -> bool:
        """Whether either board is full."""
        full = self.columns * self.rows
        return sum(len(m) for m, _ in key) == full or sum(len(t) for _, t in key) == full

    def moves(self, key: Key, die: int) -> list[Key]:
        """The positions after each placement of ``die`` in a column with room (equal facing
        pairs are the same placement)."""
        return [
            after(key, j, die)
            for j, (mine, _) in enumerate(key)
            if len(mine) < self.rows and (j == 0 or key[j] != key[j - 1])
        ]

    def solve(self, positions: list[tuple[Board, Board]]) -> Reference:
        """Values of ``positions``, the start and every position reachable from them."""
        index, keys = self.index, []

        def number(key: Key) -> int:
            if key not in index:
                index[key] = len(keys)
                keys.append(key)
            return index[key]

        for key in [self.empty(), *(key_of(*p) for p in positions)]:
            number(key)
        f, c = self.faces, self.columns
        rows: list[list[list[int]]] = []  # successor ids by die of each position, in order
        diff: list[int] = []  # the final score difference of a finished game
        done: list[bool] = []
        i = 0
        while i < len(keys):  # keys grows as new positions are met
            key = keys[i]
            i += 1
            ended = self.over(key)
            done.append(ended)
            diff.append(sum(column_score(m) - column_score(t) for m, t in key) if ended else 0)
            moves = [] if ended else [self.moves(key, die) for die in range(1, f + 1)]
            rows.append([[number(k) for k in m] for m in moves])
        # successors [position, die, column]; a missing column repeats the die's first one (a
        # max is unchanged by repeats); finished games point at themselves and are not swept
        succ = np.empty((len(keys), f, c), dtype=np.int64)
        for s, by_die in enumerate(rows):
            if not by_die:
                succ[s] = s
            for d, ids in enumerate(by_die):
                succ[s, d] = ids + ids[:1] * (c - len(ids))
        score = np.array(diff, dtype=np.float64)
        # the mover's view of a finished game: the difference, or win 1, draw 1/2, loss 0
        self._iterate("score", succ, np.array(done), score)
        self._iterate("wins", succ, np.array(done), 0.5 + 0.5 * np.sign(score))
        return self

    def _iterate(
        self, objective: str, succ: np.ndarray, done: np.ndarray, final: np.ndarray
    ) -> None:
        """Sweep both bounds until they are within the tolerance everywhere."""
        offset = 1.0 if objective == "wins" else 0.0
        best = float(self.columns * self.faces * self.rows**2)  # the best board's total
        low_end, high_end = (0.0, 1.0) if objective == "wins" else (-best, best)
        live = ~done
        nxt = succ[live]
        low = np.where(done, final, low_end)
        high = np.where(done, final, high_end)
        sweeps = 0
        while True:
            # a placement is worth offset - V(next), so the lower bound reads the upper bounds
            # and the upper bound the lower ones (already the new ones: tighter, still a bound)
            low[live] = (offset - high[nxt]).max(axis=2).mean(axis=1)
            high[live] = (offset - low[nxt]).max(axis=2).mean(axis=1)
            sweeps += 1
            gap = float((high - low).max(initial=0.0))
            if gap <= 2 * self.tolerance:
                break
            if sweeps == self.max_sweeps:
                raise RuntimeError(f"{objective}: bounds still {gap:.1e} apart")
        self.values[objective] = (low + high) / 2
        self.bound[objective] = gap / 2
        self.sweeps[objective] = sweeps

    def value(self, objective: str, mover: Board, opponent: Board) -> float:
        """The solved value of a position (:meth:`solve` must have reached it)."""
        return float(self.values[objective][self.index[key_of(mover, opponent)]])
