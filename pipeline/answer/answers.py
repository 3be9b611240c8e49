"""The one answer about a position, for every face: `expect` and `move`, the Python API,
`serve`, the explorer and `play` call :class:`Answers` and only format what it returns.

A dice game's position (:meth:`Answers.position`): the game's rules list the legal moves of
every roll (:meth:`pipeline.games.base.Game.legal_moves`); each move is worth its successor's
value, looked up in the index (:mod:`pipeline.store.states`); the best of a roll is the extreme
value and, among the moves that tie with it (:mod:`pipeline.solve.tolerance`), the largest
label: the tables' policy. A roll without a legal move is worth what the rules say: the final
score, or for a turn passed to the next player the mover's payoff in the state it passes to.
Every number of dice is worth its rolls' best values, weighted by their chances. Only the
``states`` rows are read.

A board (:meth:`Answers.board`, Knucklebones): every legal column for the die, exact from the
tables where the board is built (a column is worth its successor's value seen from the other
side, in both objectives where both are built), else the search's estimate to a depth, marked
so; one pick rule (:mod:`pipeline.answer.boards`).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.answer.boards import Boards
from pipeline.answer.model import (
    Answer,
    BoardAnswer,
    DiceOption,
    MoveValue,
    RollBest,
    Share,
    StateInfo,
)
from pipeline.errors import TableError, UsageError
from pipeline.games.registry import Variant
from pipeline.solve.tolerance import best_of, is_tie, pick, regret
from pipeline.store import directory
from pipeline.store.directory import Directory
from pipeline.store.states import DEFAULT_CACHE_MB, HeldStates, Index, StateRow, States

#: Games kept made (least recently used dropped): every variant of a data directory, and more.
MAX_GAMES = 64


class Answers:
    """Answers about the positions of one data directory, from its tables held in memory."""

    def __init__(
        self, data_dir: Path, cache_mb: float = DEFAULT_CACHE_MB, points: bool = False
    ) -> None:
        self.data_dir = Path(data_dir)
        self.index = Index(self.data_dir, cache_mb, points)
        self.directory: Directory = self.index.directory or directory.of(self.data_dir)
        """What the data directory holds (built variants, and the others), and how a name
        resolves there (:mod:`pipeline.store.directory`)."""
        self._games: OrderedDict[int, tuple[Variant, Any]] = OrderedDict()
        self._games_lock = threading.Lock()
        self._fields: dict[str, tuple[States, list[dict[str, Any]]]] = {}
        self._board_answers: Boards | None = None
        self._tiles: dict[int, tuple[Any, dict[int, tuple[int, ...]]]] = {}
        self._field_names: dict[int, tuple[Any, tuple[str, ...]]] = {}

    def variant(self, name: str) -> Variant:
        """The variant ``name`` names here: registered, named by its rules, or built here under
        its own name."""
        return self.directory.resolve(name)

    def game(self, variant: Variant) -> Any:
        """The variant's game (its rules: moves, dice, text), made once per variant object: a
        registered variant is always the same object; a custom one is made anew from the rules
        a build records, so a rule set rebuilt under the same name gets its own game."""
        with self._games_lock:
            found = self._games.get(id(variant))
            if found is not None and found[0] is variant:
                self._games.move_to_end(id(variant))
                return found[1]
        game = variant.make()
        with self._games_lock:
            self._games[id(variant)] = (variant, game)  # (the variant kept: its id stays its)
            while len(self._games) > MAX_GAMES:
                self._games.popitem(last=False)
        return game

    # -- dice games --------------------------------------------------------------------------

    def state_id(self, variant: Variant, tiles: str, **extra: Any) -> int:
        """The state id of a position as the user writes it (tiles, plus an N-player game's
        seat, best score and tie count); UsageError when it is not one."""
        if variant.codec is not None:
            return variant.codec.parse(tiles, **extra)
        return int(self.game(variant).parse_state(tiles, **extra))

    def expect(
        self,
        variant: Variant,
        tiles: str | None = None,
        *,
        state_id: int | None = None,
        **extra: Any,
    ) -> StateInfo:
        """The state (its value under optimal play, dice, ...), without its rolls."""
        return self._answer(variant, tiles, state_id, None, False, extra)[0].state

    def position(
        self,
        variant: Variant,
        tiles: str | None = None,
        *,
        state_id: int | None = None,
        roll: int | None = None,
        **extra: Any,
    ) -> Answer:
        """The answer for the position written ``tiles`` (plus an N-player game's ``player``,
        ``best_score``, ``best_count``, or two-player's ``p1_score``), or ``state_id``: the
        state, every number of dice and every roll's best move, and with ``roll`` every legal
        move ranked."""
        return self._answer(variant, tiles, state_id, roll, True, extra)[0]

    def every_roll(
        self, variant: Variant, state_id: int
    ) -> tuple[Answer, dict[int, list[MoveValue]]]:
        """The answer for a state and every roll's legal moves, ranked (the explorer embeds them
        all)."""
        found, game, maximise, moves = self._answer(variant, None, state_id, None, True, {})
        if moves is None:
            return found, {}
        tiles = self._move_tiles(game)
        return found, {r: _ranked(game, maximise, *moves.of(r), tiles) for r in moves.spans}

    def _answer(
        self,
        variant: Variant,
        tiles: str | None,
        state_id: int | None,
        roll: int | None,
        rolls: bool,
        extra: dict[str, Any],
    ) -> tuple[Answer, Any, bool, RollMoves | None]:
        """:meth:`position`, with the game, its direction and each roll's moves."""
        game = self.game(variant)
        if state_id is None:
            if tiles is None:
                raise UsageError("name the position: its open tiles, or its state id")
            state_id = self.state_id(variant, tiles, **extra)
        shown = repr(tiles) if tiles is not None else f"id {state_id}"
        states = self.index.states(variant.name, game.answer_columns)
        row = states.row(state_id)
        if row is None:
            raise UsageError(f"state {shown} is not a state of variant {variant.name}")
        state = _state_info(game, states, state_id, row)
        if roll is not None and state.terminal:
            raise UsageError(
                f"state {shown} of {variant.name} is terminal: there is nothing to roll"
            )
        if not rolls and roll is None:
            return Answer(variant.name, state, [], []), game, states.maximise, None
        chances = [] if state.terminal else game.roll_chances(state_id)
        possible = sorted({t for _, dist in chances for t, _, _ in dist})
        if roll is not None and roll not in possible:
            span = f"{possible[0]}..{possible[-1]}" if possible else "none"
            raise UsageError(
                f"roll {roll} is impossible in state {shown} of {variant.name} "
                f"(possible rolls: {span})"
            )
        best, by_roll = self._rolls(variant.name, game, states, state_id, possible)
        dice = _dice_options(chances, best, state, states.maximise)
        if roll is None:
            return Answer(variant.name, state, best, dice), game, states.maximise, by_roll
        outcome = best[possible.index(roll)]
        moves = []
        if outcome.kind == "move" and by_roll is not None:
            moves = _ranked(game, states.maximise, *by_roll.of(roll), self._move_tiles(game))
        found = Answer(variant.name, state, best, dice, roll, outcome, moves)
        return found, game, states.maximise, by_roll

    def arrays(self, variant: Variant) -> dict[str, np.ndarray]:
        """Every state of a variant by increasing id: ``state_id``, ``value``, ``dice`` (0 where
        none), ``choice_options``, ``terminal`` and the game's own columns (the N-player shares,
        NaN where null); UsageError for a variant too big to hold."""
        game = self.game(variant)
        states = self.index.states(variant.name, game.answer_columns)
        if not isinstance(states, HeldStates):
            raise UsageError(f"{variant.name} is too big to list every state")
        ids = states.all_ids()
        pos = states.positions(ids)
        out = {"state_id": ids, "value": states.value[pos]}
        out.update({key: col[pos] for key, col in states.cols.items()})
        return out

    def stuck(self, variant: Variant, state_ids: list[int]) -> list[tuple[str, int | None, float]]:
        """(kind, next state, value to the mover) of a roll that leaves no legal move, in each
        of ``state_ids`` (the explorer embeds them)."""
        game = self.game(variant)
        states = self.index.states(variant.name, game.answer_columns)
        return [self._stuck(game, states, s) for s in state_ids]

    def _rolls(
        self, name: str, game: Any, states: States, state_id: int, rolls: list[int]
    ) -> tuple[list[RollBest], RollMoves | None]:
        """Every roll's best move (or what being stuck is worth), and each roll's moves
        (labels, successors, values). A position has a few dozen moves: past the one array
        lookup of their values and of where each roll's moves end, plain Python is quicker
        than numpy's calls on tiny arrays."""
        if not rolls:
            return [], None
        found = game.legal_moves(state_id, rolls)
        offset, scale = game.move_value
        values = states.values(found.next)
        if offset != 0.0 or scale != 1.0:
            values = offset + scale * values
        vals = values.tolist()
        if math.isnan(sum(vals)):  # a NaN anywhere (the values are finite): a missing state
            raise TableError(
                f"{name}'s states table lacks positions its moves lead to; rebuild it "
                f"(stb-pipeline build --force --variant {name})"
            )
        # the moves come grouped by roll, increasing, the largest label first within a roll
        ends = np.searchsorted(found.roll, rolls, side="right").tolist()
        labels, nexts = found.label.tolist(), found.next.tolist()
        maximise = states.maximise
        tiles = self._move_tiles(game)
        out: list[RollBest] = []
        spans: dict[int, tuple[int, int]] = {}
        stuck = None
        a = 0
        for r, b in zip(rolls, ends, strict=True):
            if a == b:
                if stuck is None:
                    stuck = self._stuck(game, states, state_id)
                kind, nxt, value = stuck  # a roll without a legal move
                out.append(RollBest(r, kind, None, value, 0, nxt))
                continue
            k, _ = pick(vals, labels, a, b, best_of(vals, a, b, maximise))
            out.append(RollBest(r, "move", tiles(labels[k]), vals[k], b - a, nexts[k]))
            spans[r] = (a, b)
            a = b
        return out, RollMoves(found, values, spans)

    def _move_tiles(self, game: Any) -> Callable[[int], list[int]]:
        """``game.move_tiles`` remembered by label (a game has a few hundred move labels, and
        every answer names the tiles of a dozen of them): a fresh list each call."""
        with self._games_lock:
            known = self._tiles.get(id(game))
            if known is None or known[0] is not game:
                known = self._tiles[id(game)] = (game, {})
                while len(self._tiles) > MAX_GAMES:
                    del self._tiles[next(iter(self._tiles))]
        cache: dict[int, tuple[int, ...]] = known[1]

        def tiles(label: int) -> list[int]:
            found = cache.get(label)
            if found is None:
                found = cache[label] = tuple(game.move_tiles(label))
            return list(found)

        return tiles

    def _stuck(self, game: Any, states: States, state_id: int) -> tuple[str, int | None, float]:
        """(kind, next state, value to the mover) of a roll without a legal move: what the
        rules say, or the mover's payoff in the state play passes to (its states row)."""
        stuck = game.stuck(state_id)
        value = stuck.value
        if value is None:
            row = None if stuck.next is None else states.row(stuck.next)
            held = (
                None
                if row is None
                else (row.value if stuck.column == "value" else row.columns.get(stuck.column))
            )
            if held is None:
                raise TableError(
                    f"{states.name}'s states table lacks the state {stuck.next} play passes "
                    "to; rebuild it"
                )
            value = stuck.offset + stuck.scale * held
        return stuck.kind, stuck.next, float(value)

    def field_names(self, variant: Variant) -> tuple[str, ...]:
        """The names of what names a position besides its tiles (the N-player seat, best score,
        tie count; none for most games): the :meth:`fields`' names, from the rules alone (no
        states read), worked out once per game."""
        game = self.game(variant)
        known = self._field_names.get(id(game))
        if known is None or known[0] is not game:
            known = (game, tuple(game.state_fields(game.start_state())))
            with self._games_lock:
                self._field_names[id(game)] = known
                while len(self._field_names) > MAX_GAMES:
                    del self._field_names[next(iter(self._field_names))]
        return known[1]

    def fields(self, variant: Variant) -> list[dict[str, Any]]:
        """What names a position besides its tiles (the N-player seat, best score, tie
        count), each with the values the built states take (None: too many to list); worked
        out once per reading of the variant's states."""
        if not self.field_names(variant):
            return []  # the tiles alone name a position (no states read to say so)
        game = self.game(variant)
        states = self.index.states(variant.name, game.answer_columns)
        known = self._fields.get(variant.name)
        if known is not None and known[0] is states:
            return known[1]
        ids = states.all_ids() if isinstance(states, HeldStates) else np.zeros(0, dtype=np.int64)
        out = []
        for name, values in game.position_fields(ids).items():
            choices = np.unique(values[values != 0]).tolist()
            shown = choices if len(choices) <= MAX_CHOICES else None
            out.append({"name": name, "choices": shown, "optional": True})
        self._fields[variant.name] = (states, out)
        return out

    # -- boards -------------------------------------------------------------------------------

    @property
    def boards(self) -> Boards:
        """The Knucklebones answers (:mod:`pipeline.answer.boards`)."""
        if self._board_answers is None:
            self._board_answers = Boards(self.index)
        return self._board_answers

    def board(self, variant: Variant, *args: Any, **kwargs: Any) -> BoardAnswer:
        """A Knucklebones position and, with a die, every legal column ranked: the one answer
        of :meth:`pipeline.answer.boards.Boards.board` (its arguments: the position, the die,
        the search depth, whether to read the tables)."""
        return self.boards.board(variant, *args, **kwargs)

    def board_rules(self, variant: Variant) -> Any:
        """The board rules of a game of boards (Knucklebones), made once; UsageError for a game
        of tiles."""
        return self.boards.rules(variant)


@dataclass(frozen=True)
class RollMoves:
    """Every roll's legal moves of one state (from :meth:`Answers._rolls`), sliced when asked:
    an answer ranks the moves of one roll, the explorer those of every roll."""

    found: Any
    """The game's :class:`pipeline.games.base.LegalMoves`."""
    values: np.ndarray
    spans: dict[int, tuple[int, int]]
    """Each roll with a legal move: its rows."""

    def of(self, roll: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(labels, successors, values) of one roll's moves."""
        a, b = self.spans[roll]
        return self.found.label[a:b], self.found.next[a:b], self.values[a:b]


#: Distinct values of a position field listed as choices (more: a number to type).
MAX_CHOICES = 200


def _state_info(game: Any, states: States, state_id: int, row: StateRow) -> StateInfo:
    """The state as an answer shows it."""
    fields = game.state_fields(state_id)
    shares = _shares(fields, row.columns) if row.columns else ()
    return StateInfo(
        state_id,
        game.state_text(state_id),
        row.value,
        states.objective,
        states.maximise,
        row.dice or None,
        row.choice_options,
        row.terminal,
        fields,
        game.state_code(state_id),
        shares,
    )


def _shares(fields: dict[str, int | None], columns: dict[str, float | None]) -> tuple[Share, ...]:
    """Every player's expected payoff in a game of several players, as the states table holds
    it: one share for the earlier players holding the best score (the table does not say which
    seats they are), one for those above it, and one per seat from the mover's on."""
    seat = fields.get("player") or 1
    count = fields.get("best_count") or 0
    n = sum(1 for key in columns if key.startswith("share_") and key[6:].isdigit())
    out = []
    if count:
        out.append(Share("holder", None, count, columns.get("share_holder")))
    if seat - 1 - count > 0:
        out.append(Share("beaten", None, seat - 1 - count, columns.get("share_beaten")))
    for k in range(seat, n + 1):
        out.append(Share("mover" if k == seat else "later", k, 1, columns.get(f"share_{k}")))
    return tuple(out)


def _dice_options(
    chances: list[tuple[int, list[tuple[int, int, int]]]],
    rolls: list[RollBest],
    state: StateInfo,
    maximise: bool,
) -> list[DiceOption]:
    """Every number of dice the rules allow, worth its rolls' best values weighted by their
    chances; best first (the states table's choice), then by what each loses."""
    node = {r.roll: r.value for r in rolls}
    worth = [
        (d, math.fsum(ways / denom * node[total] for total, ways, denom in dist))
        for d, dist in chances
    ]
    if not worth:
        return []
    best = next((v for d, v in worth if d == state.dice), worth[-1][1])
    options = [
        DiceOption(d, v, regret(best, v, maximise), d == state.dice, is_tie(v, best))
        for d, v in worth
    ]
    return sorted(options, key=lambda o: (not o.best, o.regret, -o.dice))


def _ranked(
    game: Any,
    maximise: bool,
    labels: np.ndarray,
    nexts: np.ndarray,
    values: np.ndarray,
    tiles: Callable[[int], list[int]] | None = None,
) -> list[MoveValue]:
    """One roll's moves, ranked: by regret, the tie rule's pick first among equals, then the
    larger label (the tables' moves, in `move`'s order). ``tiles``: a move's tiles by label
    (:meth:`Answers._move_tiles`; else the game's)."""
    vals, labs = values.tolist(), labels.tolist()
    top = best_of(vals, 0, len(vals), maximise)
    chosen, _ = pick(vals, labs, 0, len(vals), top)
    tiles_of = tiles or game.move_tiles
    out = [
        MoveValue(
            tiles_of(lab), lab, nxt, game.state_text(nxt), v, regret(top, v, maximise),
            k == chosen, is_tie(v, top),
        )
        for k, (lab, nxt, v) in enumerate(zip(labs, nexts.tolist(), vals, strict=True))
    ]  # fmt: skip
    out.sort(key=lambda m: (m.regret, not m.best, -m.label))
    return out


def for_dir(data_dir: Path, cache_mb: float = DEFAULT_CACHE_MB) -> Answers:
    """The answers of a data directory, one per process (its index kept between calls: the
    Python API and the commands share it)."""
    return _for_dir(Path(data_dir).resolve(), cache_mb)


def one_shot(data_dir: Path) -> Answers:
    """The answers of a data directory for a process that answers once (`expect`, `move`):
    each state read by id as the answer asks for it (the state, the states its moves lead
    to), not the variant whole; the same answers as :func:`for_dir`'s."""
    return Answers(Path(data_dir).resolve(), points=True)


@lru_cache(maxsize=8)
def _for_dir(data_dir: Path, cache_mb: float) -> Answers:
    return Answers(data_dir, cache_mb)
