"""Knucklebones positions as numbers, with the standard library only: the rules as data, the
canonical numbering of a position (column order, facing-pair order, colex rank) and the reader
of a position as the user writes it ("MOVER;OPPONENT").

It is the one statement of the numbering: the game's numpy tables
(:class:`pipeline.games.knucklebones.game.PairTables`) are built from :func:`column_order` and
:func:`pair_order`, the game's ``parse_state`` is :meth:`Numbering.parse_state`, and the console
script's one-shot `expect` (:mod:`pipeline.cli.lean`, through
:attr:`pipeline.games.registry.Variant.parser`) reads a position with it without numpy.

- A column is a multiset of at most ``rows`` dice, written as its counts per face; columns are
  ordered by size, then by those counts (so column 0 is the empty one).
- A facing pair is (mover column, opponent column) sharing no value; pairs are ordered by the
  dice in the pair, then the mover column, then the opponent column (pair 0 is empty).
- A position is the multiset of its ``columns`` pairs; its state id is the colex rank of the
  sorted pair indices ``p_0 <= p_1 <= ...``: the sum of ``C(p_i + i, i + 1)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import combinations_with_replacement
from math import comb
from typing import Any

from pipeline.errors import UsageError
from pipeline.games.tiles import refuse_position

OBJECTIVES = ("wins", "score")
MAX_COLUMNS = 4
MAX_ROWS = 4
MAX_FACES = 9
EMPTY_COLUMN = "_"


@dataclass(frozen=True)
class KnuckleRules:
    """Board size, die and objective of a Knucklebones game (Cult of the Lamb: 3, 3, 6)."""

    columns: int = 3
    rows: int = 3
    faces: int = 6
    objective: str = "wins"

    def __post_init__(self) -> None:
        if not 1 <= self.columns <= MAX_COLUMNS:
            raise UsageError(f"columns must be between 1 and {MAX_COLUMNS}, not {self.columns}")
        if not 1 <= self.rows <= MAX_ROWS:
            raise UsageError(f"rows must be between 1 and {MAX_ROWS}, not {self.rows}")
        if not 2 <= self.faces <= MAX_FACES:
            raise UsageError(f"die faces must be between 2 and {MAX_FACES}, not {self.faces}")
        if self.objective not in OBJECTIVES:
            raise UsageError(f"objective must be one of {', '.join(OBJECTIVES)}")

    @property
    def slots(self) -> int:
        """Slots on one board."""
        return self.columns * self.rows

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for table metadata."""
        return {"game": "knucklebones", **asdict(self)}


# -- the numbering ---------------------------------------------------------------------------


@functools.cache
def column_order(rows: int, faces: int) -> tuple[tuple[int, ...], ...]:
    """Every column (multiset of at most ``rows`` dice) as its counts per face (face 1 first),
    by size, then by those counts."""
    # a column is a multiset of ``rows`` slots, each a face (0-based) or empty (``faces``)
    slots = combinations_with_replacement(range(faces + 1), rows)
    counts = [tuple(s.count(v) for v in range(faces)) for s in slots]
    return tuple(sorted(counts, key=lambda c: (sum(c), c)))


@functools.cache
def pair_order(rows: int, faces: int) -> tuple[tuple[int, int], ...]:
    """Every facing pair (mover column, opponent column: indices in :func:`column_order`) of
    two columns sharing no value, by the dice in the pair, then mover column, then opponent
    column."""
    columns = column_order(rows, faces)
    held = [sum(1 << v for v, c in enumerate(col) if c) for col in columns]
    size = [sum(col) for col in columns]
    by_dice: list[list[tuple[int, int]]] = [[] for _ in range(2 * rows + 1)]
    for a, mine in enumerate(held):
        for b, theirs in enumerate(held):
            if not mine & theirs:
                by_dice[size[a] + size[b]].append((a, b))
    return tuple(pair for same in by_dice for pair in same)


@functools.cache
def column_numbers(rows: int, faces: int) -> dict[tuple[int, ...], int]:
    """Each column's counts per face -> its index in :func:`column_order`."""
    return {counts: k for k, counts in enumerate(column_order(rows, faces))}


@functools.cache
def pair_numbers(rows: int, faces: int) -> dict[tuple[int, int], int]:
    """Each facing pair (mover column, opponent column) -> its index in :func:`pair_order`."""
    return {pair: k for k, pair in enumerate(pair_order(rows, faces))}


def column_number(dice: Sequence[int], rows: int, faces: int) -> int:
    """Index of the column holding ``dice`` (each a face 1..faces, at most ``rows``)."""
    held = [int(d) for d in dice]
    return column_numbers(rows, faces)[tuple(held.count(v) for v in range(1, faces + 1))]


def rank(pairs: Sequence[int]) -> int:
    """The canonical state id of a position's pair indices, in any order: the colex rank of
    the multiset (:func:`pipeline.games.knucklebones.game.rank_multisets` is its array form)."""
    return sum(comb(p + i, i + 1) for i, p in enumerate(sorted(pairs)))


class Numbering:
    """The canonical numbering of one board shape and die, and the reader of its positions."""

    def __init__(self, rules: KnuckleRules) -> None:
        self.r = rules

    def pairs_of_boards(self, mine: list[list[int]], theirs: list[list[int]]) -> list[int]:
        """Pair indices of two boards given column by column (the mover's first); UsageError
        where a value stands in both columns of a pair."""
        out = []
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            shared = sorted(set(a) & set(b))
            if shared:
                raise UsageError(
                    f"column {i + 1}: {shared[0]} stands on both boards, but placing it removes "
                    "the other player's"
                )
            rows, faces = self.r.rows, self.r.faces
            pair = (column_number(a, rows, faces), column_number(b, rows, faces))
            out.append(pair_numbers(rows, faces)[pair])
        return out

    def state_of_boards(self, mine: list[list[int]], theirs: list[list[int]]) -> int:
        """Canonical state id of two boards (mover first)."""
        return rank(self.pairs_of_boards(mine, theirs))

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of a position written "mover;opponent" (see :func:`parse_board`)."""
        if extra.get("p1_score") is not None:
            raise UsageError("--p1-score applies only to the two-player Shut the Box game")
        refuse_position(extra)  # a seat or a best score is the N-player games', not a board's
        if text.count(";") != 1:
            raise UsageError(f"position {text!r}: write the two boards as MOVER;OPPONENT")
        mine, theirs = text.split(";")
        return self.state_of_boards(
            parse_board(mine, self.r, "mover"), parse_board(theirs, self.r, "opponent")
        )


# -- boards as text --------------------------------------------------------------------------


def parse_board(text: str, rules: KnuckleRules, who: str = "board") -> list[list[int]]:
    """A board written column by column: columns separated by "/", each its dice as digits.

    "_", "-", "." or nothing is an empty slot (an empty column can be "_" or ""), so
    "44_/1__/___", "44/1/_" and "44/1/" are the same board. (Start a board with "_" rather than
    "-", which a command line reads as an option.) The order of dice in a column does not
    matter.
    Raises UsageError with a one-line reason for anything else.
    """
    cols = text.strip().split("/")
    if len(cols) != rules.columns:
        raise UsageError(
            f"{who} {text!r}: expected {rules.columns} columns separated by '/', got {len(cols)}"
        )
    out: list[list[int]] = []
    for i, col in enumerate(cols):
        dice = [d for ch in col.strip() if (d := _die(ch, rules, f"{who} {text!r}", "column", i))]
        if len(dice) > rules.rows:
            raise UsageError(
                f"{who} {text!r}: column {i + 1} holds {len(dice)} dice, at most {rules.rows}"
            )
        out.append(sorted(dice))
    return out


#: Both board formats, for error messages (the same board, a column 4, 4, a column 1, an empty one).
BOARD_FORMATS = (
    "write a board as columns separated by '/' (44_/1__/___) or as the Rust solver's rows of "
    "squares, "
    "one line per row, '_' for an empty square (\"41_\\n4__\\n___\", a real newline or the "
    "two characters \\n)"
)


def parse_grid(text: str, rules: KnuckleRules, who: str = "board") -> list[list[int]]:
    """A board written as the Rust solver writes it: one line per row, one character per column.

    Line r, character c is the square in row r of column c ("_" empty; "-" and "." too). The
    seed numbers squares (row, column): its "(0, 2), (1, 2)" is two dice stacked in one column,
    so lines are rows. Lines may be separated by a real newline or the two characters
    backslash-n (how "___\\n___\\n___" arrives from a shell without $'...'). The order of dice
    in a column does not matter, so gaps inside a column are accepted.
    Raises UsageError with a one-line reason for anything else.
    """
    rows = text.replace("\\n", "\n").replace("\r\n", "\n").strip().split("\n")
    lines = [line.strip() for line in rows]
    if len(lines) != rules.rows or any(len(line) != rules.columns for line in lines):
        sizes = ", ".join(str(len(line)) for line in lines)
        raise UsageError(
            f"{who} {text!r}: expected {rules.rows} rows of {rules.columns} squares, "
            f"got {len(lines)} rows of {sizes}"
        )
    out: list[list[int]] = [[] for _ in range(rules.columns)]
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            if d := _die(ch, rules, f"{who} {text!r}", "row", r):
                out[c].append(d)
    return [sorted(col) for col in out]


def _die(ch: str, rules: KnuckleRules, where: str, line: str, k: int) -> int:
    """The face a board's character holds (0: an empty slot, "_", "-" or "."); UsageError
    naming ``where`` and the ``line`` (column or row) ``k`` for anything else."""
    if ch in "-_.":
        return 0
    if not (ch.isascii() and ch.isdigit()) or not 1 <= int(ch) <= rules.faces:
        raise UsageError(f"{where}: {ch!r} in {line} {k + 1} is not a die face 1..{rules.faces}")
    return int(ch)


def read_board(text: str, rules: KnuckleRules, who: str = "board") -> list[list[int]]:
    """A board in either format, told apart by its separators: "/" for columns
    (:func:`parse_board`), a newline or backslash-n for the Rust solver's rows (:func:`parse_grid`).

    Every UsageError names both formats, so a user who guessed wrong sees the other one.
    """
    columns = "/" in text
    rows = "\n" in text or "\\n" in text
    try:
        if (columns and not rows) or (not rows and rules.columns == 1):
            return parse_board(text, rules, who)
        if (rows and not columns) or (not columns and rules.rows == 1):
            return parse_grid(text, rules, who)
        raise UsageError(f"{who} {text!r}: neither board format")
    except UsageError as exc:
        raise UsageError(f"{exc}; {BOARD_FORMATS}") from None
