"""The one answer about a Knucklebones position, for every face: `knucklebones solve`, `tree`,
`play` and `benchmark`'s perfect player, `knucklebones loss`, the Python API
(``pipeline.board``, ``pipeline.knucklebones_column``) and `serve` call :meth:`Boards.board` and
only format what it returns.

**Exact, from the tables.** A board is solved for two objectives, the win chance (a draw counts
1/2) and the expected score difference, each its own variant (``knucklebones`` and
``knucklebones-score``). The tables of an objective are found by the rules their ``states`` file
records (:meth:`Boards.found`), so a custom build of the same board serves too: the variant
asked if it is built, else any built variant with its board, die and objective; its twin is the
built variant with the other objective. A column is worth its successor's value seen from the
other side, in each objective built (the position and its successors: one lookup each, a row
group at a time for the full game's lean tables,
:meth:`pipeline.store.states.Index.sorted_states`).
With only the variant's own objective built, the other's values are None; with only the other
one built, the answer is searched (the values of the objective asked are not in any table).

**Searched.** Where the board's tables are not built (the full game until a GPU builds it), the
depth-limited expectimax (:mod:`pipeline.games.knucklebones.players.search`) estimates both values
of every column, ``depth`` placements deep, each marked exact where every line searched ends the
game. The search maximises the win chance, then the difference, whatever the objective: a score
variant's searched values are that play's expected differences.

**One pick rule** (:func:`pick`), the tables' policy: the best value in the *variant's own
objective*; among the columns within the tie tolerance of it (1e-12, relative:
:mod:`pipeline.solve.tolerance`), the largest label (the column whose facing pair comes last in
the position's canonical order: the policy's tie rule); among columns with the same facing pair
(one move), the lowest column number. Where the other objective's values are known and the pick
is not among its best, the answer says which column that objective would pick
(:attr:`~pipeline.answer.model.BoardAnswer.other_best`): the variant's objective wins, both
values are shown.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.answer.model import BoardAnswer, ColumnValue
from pipeline.errors import TableError, TablesMissingError, UsageError
from pipeline.games.registry import REGISTRY, Variant
from pipeline.solve.tolerance import is_tie, pick_two, regret
from pipeline.solve.tolerance import pick as tie_pick
from pipeline.store import directory
from pipeline.store.states import Index

#: Search depth (placements) when none is asked, and the deepest `serve` offers (deeper searches
#: take seconds on the full game; the deepest any face asks is the board rules' ``deepest``).
DEFAULT_DEPTH = 3
MAX_DEPTH = 5
#: A searched answer goes on to the end of every line where that meets at most about this many
#: leaves (milliseconds of search): the endgame is then exact, not estimated.
END_LEAVES = 20_000


@dataclass(frozen=True)
class Found:
    """The built variants holding a board's tables: its own objective's and its twin's."""

    own: str | None
    twin: str | None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n in (self.own, self.twin) if n is not None)


def pick(
    values: list[float], labels: list[int], columns: list[int], then: list[float] | None = None
) -> int:
    """The index of the tie rule's column among ``values`` (each column's value in the
    variant's objective, higher better): the tables' pick, the largest label among those within
    the tie tolerance of the best, then the lowest column (equal facing pairs are one move);
    with ``then`` (the other objective's values: the search's pick, the player engine's,
    :func:`pipeline.solve.tolerance.pick_two`), among those that tie with its best there too,
    the first in canonical order (the smallest label), then the lowest column."""
    if then is not None:
        order = sorted(range(len(values)), key=lambda k: (labels[k], columns[k]))
        found, _ = pick_two([values[k] for k in order], [then[k] for k in order], 0, len(order))
        return order[found]
    ranks = [(label, -column) for label, column in zip(labels, columns, strict=True)]
    return tie_pick(values, ranks, 0, len(values), max(values))[0]


class Boards:
    """The answers about Knucklebones positions of one data directory."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.directory = directory.of(Path(index.data_dir))
        self._rules: dict[str, tuple[Variant, Any]] = {}
        self._lock = threading.Lock()
        self._search_lock = threading.Lock()

    def rules(self, variant: Variant) -> Any:
        """The board rules of a game of boards, made once; UsageError for a game of tiles."""
        if variant.board is None:
            raise UsageError(f"{variant.name} is not a game of boards (name its tiles instead)")
        with self._lock:
            found = self._rules.get(variant.name)
            if found is not None and found[0] is variant:
                return found[1]
        rules = variant.board()
        with self._lock:
            self._rules[variant.name] = (variant, rules)
        return rules

    def found(self, variant: Variant) -> Found:
        """The built variants holding ``variant``'s board's tables (own objective, twin)."""
        return self._find(variant.name, self.rules(variant))

    def _find(self, name: str, rules: Any) -> Found:
        """The tables of ``rules``' board and die (a :class:`BoardRules`), by the rules every
        ``states`` file records, as the data directory's snapshot says (a build just committed
        is seen at once; a damaged file: TableError naming it): ``name`` for its own objective
        where built with those rules, else the first built variant (by name) with them; the
        twin the first with the other objective."""
        snap = self.directory.snapshot()
        if snap.unreadable_states:
            raise TableError(snap.unreadable_states[0])
        own = self.directory.find(rules.rules_of(rules.objective), name)
        return Found(own, self.directory.find(rules.rules_of(rules.other_objective)))

    def variant(self, rules: Any) -> tuple[Variant | None, str | None]:
        """The built variants holding the tables of board rules ``rules``: its objective's, as
        a variant (registered, or made from the rules it was built with), and its twin's name
        (each None where none is)."""
        found = self._find("", rules)
        if found.own is None:
            return None, found.twin
        want = rules.rules_of(rules.objective)  # the family's name is the game it records
        named = REGISTRY.get(found.own)
        if named is not None:
            return named, found.twin
        # a custom build (no family reads a board's recorded rules back): a variant of the
        # board whose name is the build's; its tables are found by their rules all the same
        return Variant(
            found.own, f"{found.own}: a Knucklebones board built here", lambda: rules.game,
            False, family=want["game"], separate=True, board=lambda: rules, view="boards",
        ), found.twin  # fmt: skip

    def board(
        self,
        variant: Variant,
        position: Any = None,
        die: int | None = None,
        depth: int | None = None,
        built: bool | None = None,
    ) -> BoardAnswer:
        """A position (text MOVER;OPPONENT, a board rules' position, or None: the empty
        boards) and with ``die`` every legal column ranked: exact from the tables where the
        board's are built (``built`` None: where found; False: searched all the same; True:
        TablesMissingError unless found), else the search's estimate ``depth`` placements
        deep."""
        rules = self.rules(variant)
        if position is None:
            here = rules.start()
        elif isinstance(position, str):
            here = rules.read(position)
        else:
            here = position
        if die is not None:
            rules.check_die(die)
        if depth is not None and not 1 <= depth <= rules.deepest:
            raise UsageError(f"depth must be between 1 and {rules.deepest}, not {depth}")
        found = Found(None, None) if built is False else self.found(variant)
        if built and found.own is None:
            raise TablesMissingError(
                f"{variant.name} is not built: run `stb-pipeline build --variant {variant.name}`"
            )
        exact = found.own is not None
        mine, theirs = rules.scores(here)
        head = dict(
            variant=variant.name, board=rules.text(here), mover_score=mine,
            opponent_score=theirs, objective=rules.objective, over=rules.over(here), die=die,
            exact=exact, tables=found.names if exact else (),
            source="tables" if exact else "search",
        )  # fmt: skip
        if head["over"]:
            final = rules.final_values(here)
            return BoardAnswer(
                **{**head, "source": "tables" if exact else "end"},
                depth=None if exact else depth or self.depth_of(rules),
                value=rules.final_value(here), columns=[], value_exact=True, win=final["win"],
                diff=final["diff"],
            )  # fmt: skip
        if exact:
            return self._exact(found, rules, here, die, head)
        return self._searched(rules, here, die, depth, head)

    @staticmethod
    def depth_of(rules: Any) -> int:
        """The search depth when none is asked: the board's evaluator's, else
        :data:`DEFAULT_DEPTH`."""
        return rules.default_depth or DEFAULT_DEPTH

    def _values(self, name: str, ids: np.ndarray) -> np.ndarray:
        values = self.index.sorted_states(name).values(ids)
        if np.isnan(values).any():
            raise TableError(f"{name}'s states table lacks positions; rebuild it")
        return values

    def _exact(
        self, found: Found, rules: Any, here: Any, die: int | None, head: dict[str, Any]
    ) -> BoardAnswer:
        """Every column worth its successor's value, in each objective built."""
        succ = rules.successors(here, die) if die is not None else []
        ids = np.array(
            [rules.state_id(here), *(rules.state_id(p) for _, p in succ)], dtype=np.int64
        )
        fields = rules.fields
        by_field: dict[str, np.ndarray | None] = dict.fromkeys(fields.values())
        assert found.own is not None
        by_field[fields[rules.objective]] = self._values(found.own, ids)
        if found.twin is not None:
            by_field[fields[rules.other_objective]] = self._values(found.twin, ids)
        here_values = {f: None if v is None else float(v[0]) for f, v in by_field.items()}
        columns: dict[str, list[float] | None] = {}
        for objective, field in fields.items():
            values = by_field[field]
            if values is None:
                columns[field] = None
            else:
                offset, scale = rules.move_value_of(objective)
                columns[field] = (offset + scale * values[1:]).tolist()
        cols, other_best = _ranked(rules, here, succ, columns, [True] * len(succ))
        value = here_values[fields[rules.objective]]
        assert value is not None
        return BoardAnswer(
            **head, depth=None, value=value, columns=cols, value_exact=True,
            other_best=other_best, win=here_values["win"], diff=here_values["diff"],
        )  # fmt: skip

    def _searched(
        self, rules: Any, here: Any, die: int | None, asked: int | None, head: dict[str, Any]
    ) -> BoardAnswer:
        """Every column's value from the board's opening book where the position and its
        successors are in it, else searched: ``asked`` placements deep (None: the board's own
        player's depth, close calls deeper where it does so), or to the end of every line
        where that is no deeper than :data:`MAX_DEPTH` and the search gets there. The book is
        read first: a damaged evaluator never breaks an answer the book holds."""

        booked = rules.book_values(here, die)
        if booked is not None:
            return self._booked(rules, here, booked, head)
        depth = asked or self.depth_of(rules)
        deeper = rules.deeper if asked is None else None
        leaves = rules.leaves if deeper else None
        end = rules.end_depth(here, END_LEAVES)
        with self._search_lock:  # one search at a time: the transposition table is shared
            # first to the end of every line where that is cheap: exact if no removal prolongs
            # a line; else the board's player (the engine's decision: the depth asked, deeper
            # on a close call)
            found: list[tuple[int, Any]] | None = None
            if end is not None and end > depth:
                d, ev = end, rules.evaluate(here, end)
                found = rules.searched(here, die, end) if die is not None else []
                if not (ev.exact and all(e.exact for _, e in found)):
                    found = None
            if found is None:
                d, found = rules.decided(here, die, depth, deeper, leaves) if die is not None else (
                    depth, [])  # fmt: skip
                # the position's own value (before the roll) at the player's depth: searched
                # as deep as a close call's columns it would cost every face's close call
                ev = rules.evaluate(here, depth)
        succ = dict(rules.successors(here, die)) if die is not None else {}
        pairs = [(c, succ[c]) for c, _ in found]
        fields = rules.fields
        columns: dict[str, list[float] | None] = {
            f: [float(getattr(e, f)) for _, e in found] for f in fields.values()
        }
        ended = bool(ev.exact) and all(e.exact for _, e in found)
        cols, other_best = _ranked(
            rules, here, pairs, columns, [bool(e.exact) for _, e in found], searched=True
        )
        head = {**head, "source": "end" if ended else "search"}
        return BoardAnswer(
            **head, depth=d, value=float(getattr(ev, fields[rules.objective])), columns=cols,
            win=float(ev.win), diff=float(ev.diff), value_exact=bool(ev.exact),
            other_best=other_best, player=rules.player_name(depth, deeper, leaves),
        )  # fmt: skip

    def _booked(self, rules: Any, here: Any, booked: tuple, head: dict[str, Any]) -> BoardAnswer:
        """Every column's exact value from the board's opening book."""
        values, succ = booked
        fields = rules.fields
        pairs = [(c, p) for c, p, _, _ in succ]
        columns: dict[str, list[float] | None] = {
            "win": [w for _, _, w, _ in succ],
            "diff": [d for _, _, _, d in succ],
        }
        cols, other_best = _ranked(rules, here, pairs, columns, [True] * len(succ))
        return BoardAnswer(
            **{**head, "exact": True, "source": "book"}, depth=None,
            value=values[fields[rules.objective]], columns=cols, win=values["win"],
            diff=values["diff"], value_exact=True, other_best=other_best,
        )  # fmt: skip


def _ranked(
    rules: Any,
    here: Any,
    succ: list[tuple[int, Any]],
    columns: dict[str, list[float] | None],
    exact: list[bool],
    searched: bool = False,
) -> tuple[list[ColumnValue], int | None]:
    """The columns (``succ``: column and successor, increasing; ``columns``: each field's
    values in that order, None where its objective is not known) ranked by the variant's
    objective: by what each loses against the pick, the pick first among equals, then by
    column; and the column the other objective would pick where the pick is not among its best
    (None: they agree, or the other objective's values are unknown). ``searched``: the values
    are a search's, which breaks its objective's ties by the other (the player engine's pick);
    the tables' pick is their policy's (:func:`pick`)."""
    if not succ:
        return [], None
    own = columns[rules.fields[rules.objective]]
    other = columns[rules.fields[rules.other_objective]]
    assert own is not None
    numbers = [c for c, _ in succ]
    labels = [rules.label(here, c) for c in numbers]
    best = pick(own, labels, numbers, other if searched else None)
    top = own[best]
    win, diff = columns.get("win"), columns.get("diff")
    out = [
        ColumnValue(
            c, own[k], rules.text(p), regret(top, own[k], True), k == best,
            win=None if win is None else win[k], diff=None if diff is None else diff[k],
            exact=exact[k],
        )
        for k, (c, p) in enumerate(succ)
    ]  # fmt: skip
    out.sort(key=lambda c: (c.loss, not c.best, c.column))
    if other is None:
        return out, None
    theirs = pick(other, labels, numbers)
    return out, None if is_tie(other[best], other[theirs]) else numbers[theirs]
