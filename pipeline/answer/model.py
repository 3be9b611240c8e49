"""The typed answers about one position, and their JSON (plain dicts of numbers, strings,
lists and None: what `serve` sends and the explorer and `play` read).

A dice game's position (:class:`Answer`): the state and its value, every number of dice the
rules allow with what it is worth, every roll's best move, and for one roll every legal move
ranked. A Knucklebones board (:class:`BoardAnswer`): the position and, for a die, every legal
column ranked, exact from the tables or the search's estimate.

The classes are plain (not frozen) dataclasses with slots: an answer makes a few dozen of them,
and a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, five times
the cost (about 15 us an answer, a tenth of the server's work on a position). Treat them as
values all the same: nothing here changes one once it is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Share:
    """One player's expected payoff in a game of several players (a share of the win, or
    stakes won), as the states table holds it."""

    who: str
    """``holder`` (each earlier player holding the best score), ``beaten`` (each earlier player
    above it), ``mover`` or ``later`` (one seat each)."""
    seat: int | None
    """The seat, for the mover and the later seats (the table does not say which earlier
    players hold the best score)."""
    players: int
    """How many players get this share (the shares weighted by it add up to 1, stakes to 0)."""
    share: float | None

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "seat": self.seat, "players": self.players, "share": self.share}


@dataclass(slots=True)
class StateInfo:
    """A state of a dice game, as the states table describes it."""

    id: int
    tiles: str
    value: float
    objective: str
    maximise: bool
    dice: int | None
    """The number of dice optimal play rolls here (None: nothing is rolled)."""
    choice_options: int
    """How many numbers of dice the rules allow here."""
    terminal: bool
    fields: dict[str, int | None] = field(default_factory=dict)
    """What names the position besides its tiles (the N-player games' seat, best score so far
    and how many share it)."""
    code: str | None = None
    """Another way the tables write the state (Double Shutter: its digits, ``state``)."""
    shares: tuple[Share, ...] = ()

    @property
    def players(self) -> int | None:
        """Players in the game (games of several players), else None."""
        return sum(s.players for s in self.shares) if self.shares else None

    def to_json(self) -> dict[str, Any]:
        out = _json(self, "id tiles value objective maximise dice choice_options terminal")
        out["fields"] = dict(self.fields)
        if self.code is not None:
            out["state"] = self.code
        if self.shares:
            out["players"] = self.players
            out["shares"] = [s.to_json() for s in self.shares]
        return out


@dataclass(slots=True)
class RollBest:
    """One possible roll and what optimal play does with it."""

    roll: int
    kind: str
    """``move``, ``end`` (no legal move: the game ends) or ``pass`` (the next player plays)."""
    best: list[int] | None
    """The tie rule's best move (the tiles shut), None when no move is legal."""
    value: float
    """The value after the best move (when stuck: what that is worth to the mover)."""
    moves: int
    """Legal moves."""
    next_id: int | None
    """The state the best move (or the pass) leads to; None when the game ends."""

    def to_json(self) -> dict[str, Any]:
        # written out, as in MoveValue and DiceOption: one per roll of every answer, where
        # _json costs the server a fifth more CPU a request
        return {"roll": self.roll, "kind": self.kind, "best": self.best, "value": self.value,
                "moves": self.moves}  # fmt: skip


@dataclass(slots=True)
class DiceOption:
    """One number of dice the rules allow, with its value before the roll."""

    dice: int
    value: float
    regret: float
    best: bool
    """The number optimal play rolls (the states table's ``dice``)."""
    tied: bool = False
    """Whether it ties with the best under the tie rule (a best choice, picked or not)."""

    def to_json(self) -> dict[str, Any]:
        return {"dice": self.dice, "value": self.value, "regret": self.regret, "best": self.best,
                "tied": self.tied}  # fmt: skip


@dataclass(slots=True)
class MoveValue:
    """One legal move for the roll: its value is its successor's value."""

    move: list[int]
    label: int
    """The game's label of the move (the tie rule picks the largest among equal values)."""
    next_id: int
    next_tiles: str
    value: float
    regret: float
    """What it loses against the best move (0 for a best move)."""
    best: bool
    """The tie rule's pick (the policy's move)."""
    tied: bool = False
    """Whether it ties with the best under the tie rule (a best move, picked or not)."""

    def to_json(self) -> dict[str, Any]:
        return {"move": self.move, "next_id": self.next_id, "next_tiles": self.next_tiles,
                "value": self.value, "regret": self.regret, "best": self.best,
                "tied": self.tied}  # fmt: skip


@dataclass(slots=True)
class Answer:
    """One position of a dice game: exact, from the solved tables."""

    variant: str
    state: StateInfo
    rolls: list[RollBest]
    """Every possible roll, increasing (empty when nothing is rolled, or when not asked)."""
    dice: list[DiceOption]
    """Every number of dice the rules allow, best first."""
    roll: int | None = None
    outcome: RollBest | None = None
    """The roll's best move, when a roll was given."""
    moves: list[MoveValue] = field(default_factory=list)
    """The roll's legal moves, best first: by regret, the tie rule's pick first among equals,
    then the larger label (empty when stuck or no roll was given)."""

    @property
    def value(self) -> float:
        """The state's value, or with a roll the value after its best move."""
        return self.outcome.value if self.outcome is not None else self.state.value

    @property
    def best_move(self) -> list[int] | None:
        """The roll's best move (None when stuck or no roll was given)."""
        return None if self.outcome is None else self.outcome.best

    @property
    def passes_turn(self) -> bool:
        """True when the roll leaves no legal move and the next player plays."""
        return self.outcome is not None and self.outcome.kind == "pass"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "variant": self.variant,
            "source": "tables",
            "exact": True,
            "state": self.state.to_json(),
            "roll": self.roll,
            "rolls": [r.to_json() for r in self.rolls],
            "dice_options": [d.to_json() for d in self.dice],
        }
        if self.outcome is not None:
            out["outcome"] = _json(self.outcome, "kind value next_id")
            out["moves"] = [m.to_json() for m in self.moves]
        return out


@dataclass(slots=True)
class ColumnValue:
    """One legal column for the die."""

    column: int
    """1-based, on the mover's board as given."""
    value: float
    """The mover's value after placing the die there, in the variant's objective (win
    probability, or expected score difference)."""
    next: str
    """The position the opponent then faces (their board first)."""
    loss: float
    """What it loses against the best column, in the variant's objective."""
    best: bool
    """The pick (:func:`pipeline.answer.boards.pick`: the tables' policy)."""
    win: float | None = None
    """The win probability after it (a draw counts 1/2): from the wins table, or the search's
    estimate; None where the tables hold the score objective only."""
    diff: float | None = None
    """The expected final score difference after it: from the score table (play that
    maximises it), or the search's estimate (under its play); None where the tables hold the
    win objective only."""
    exact: bool = True
    """False where the search estimated (a line ran past its depth)."""

    def to_json(self) -> dict[str, Any]:
        return _json(self, "column value next win diff value_exact=exact loss best")


@dataclass(slots=True)
class BoardAnswer:
    """One Knucklebones position (the mover's board first) and, with a die, every column: the
    one answer of :mod:`pipeline.answer.boards`."""

    variant: str
    board: str
    mover_score: int
    opponent_score: int
    objective: str
    over: bool
    die: int | None
    exact: bool
    """True when the values are looked up exactly, in the tables or the opening book (False:
    searched; see :attr:`source`)."""
    depth: int | None
    """The search depth in placements (None: from the tables)."""
    value: float
    """The position's value before the roll, in the variant's objective."""
    columns: list[ColumnValue]
    """Every legal column for the die, best first (empty without a die, or when over)."""
    win: float | None = None
    """The position's win probability (None: the wins table is not built)."""
    diff: float | None = None
    """The position's expected score difference (None: the score table is not built)."""
    value_exact: bool | None = None
    """Whether the position's own value is exact (the search's may be an estimate)."""
    tables: tuple[str, ...] = ()
    """The variants whose tables were read: the objective's own, then its twin's (empty:
    searched)."""
    other_best: int | None = None
    """The column the other objective would pick, where the pick is not among its best
    columns (the variant's objective wins; None: they agree, or its values are unknown)."""
    source: str = "tables"
    """Where the values come from: ``tables`` (the board's exact tables), ``book`` (the
    packaged opening book: exact), ``end`` (searched to the end of every line: exact) or
    ``search`` (the search's estimate)."""
    player: str | None = None
    """The searching player as players are named and rated, e.g. ``net-d4+6`` (the distilled
    evaluator at the leaves, 4 placements deep and 6 on a close call) or ``ours-d3`` (None:
    looked up); :attr:`depth` is how deep it searched this position."""

    @property
    def how(self) -> str:
        """The answer's exactness in words: ``exact: yes (tables)``, ``exact: yes (book)``,
        ``exact: yes (searched to the end)`` or ``estimate (net-d3)``."""
        if self.source == "search":
            return f"estimate ({self.player})" if self.player else "estimate"
        words = {"tables": "tables", "book": "book", "end": "searched to the end"}
        return f"exact: yes ({words.get(self.source, self.source)})"

    @property
    def best(self) -> ColumnValue | None:
        """The best column (None without a die)."""
        return self.columns[0] if self.columns else None

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "view": "boards",
            **_json(self, "board mover_score opponent_score objective over die source player"),
            **_json(self, "exact depth"),
            "tables": list(self.tables),
            **_json(self, "value win diff value_exact other_best"),
            "columns": [c.to_json() for c in self.columns],
        }


def _json(answer: Any, names: str) -> dict[str, Any]:
    """``{name: answer.name}`` for each of the space-separated ``names``, in their order (the
    JSON's order); ``key=name`` where the JSON names a field otherwise."""
    out = {}
    for name in names.split():
        key, _, attr = name.partition("=")
        out[key] = getattr(answer, attr or key)
    return out
