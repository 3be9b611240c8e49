"""One Knucklebones position and the columns a die can go in, for the answers of every face
(:mod:`pipeline.answer`): the position as the user writes it (MOVER;OPPONENT, the mover's board
first, columns in the user's order), each legal column's successor as the opponent sees it, and
the search's values where no table is built.

The values of exact tables are looked up by the answer layer; a column is worth its successor's
value seen from the other side (:meth:`BoardRules.move_value_of`). A board is solved for two
objectives (:data:`FIELDS`), the win chance and the score difference: the answer shows both where
both are built, and ranks by the variant's own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones import DEEPEST
from pipeline.games.knucklebones.game import Knucklebones, board_game
from pipeline.games.knucklebones.numbering import OBJECTIVES, read_board

# the objectives' value names, the same in an answer as in a labelled set
from pipeline.games.knucklebones.players.labels import FIELDS

if TYPE_CHECKING:
    from pipeline.games.knucklebones.players.evaluator import Evaluator
    from pipeline.games.knucklebones.players.search import Eval, Searcher


@dataclass(frozen=True)
class Position:
    """Two boards as facing column pairs, in the user's column order."""

    pairs: np.ndarray


class BoardRules:
    """The board rules of one Knucklebones game, as the answers use them."""

    deepest = DEEPEST  # the deepest search an answer takes

    def __init__(self, game: Knucklebones) -> None:
        self.game = game
        r = game.r
        self.columns, self.rows, self.faces = r.columns, r.rows, r.faces
        self.objective = r.objective
        self._searcher: Searcher | None = None
        self._recorded: dict[str, dict[str, object]] = {}

    @property
    def fields(self) -> dict[str, str]:
        """Each objective and the answer's name of its value (:data:`FIELDS`)."""
        return dict(FIELDS)

    def move_value_of(self, objective: str) -> tuple[float, float]:
        """A column's value in ``objective`` (this board's, or its twin's) is ``offset + scale *
        value(successor)``: the successor is the opponent's position (1 - P(win), or minus the
        expected difference)."""
        return (1.0, -1.0) if objective == "wins" else (0.0, -1.0)

    @property
    def other_objective(self) -> str:
        """The objective of this board's twin (``score`` for ``wins``, and back)."""
        return next(o for o in OBJECTIVES if o != self.objective)

    def rules_of(self, objective: str) -> dict[str, object]:
        """The rules a build of this board and die for ``objective`` records (``stb.rules``):
        how the answer finds the tables of each objective, whatever the variants' names."""
        found = self._recorded.get(objective)
        if found is None:  # made once: every answer compares them with the built tables'
            found = self._recorded[objective] = replace(self.game.r, objective=objective).to_dict()
        return found

    def start(self) -> Position:
        """Both boards empty."""
        return Position(np.zeros(self.columns, dtype=np.int64))

    def read(self, text: str) -> Position:
        """A position written MOVER;OPPONENT (each board as `knucklebones solve` reads it);
        UsageError for anything else, or for a die standing on both boards of a column."""
        if text.count(";") != 1:
            raise UsageError(f"board {text[:60]!r}: write the two boards as MOVER;OPPONENT")
        mine, theirs = text.split(";")
        return self.boards(mine, theirs)

    def boards(
        self, mine: str, theirs: str, who: tuple[str, str] = ("mover", "opponent")
    ) -> Position:
        """The position of two boards written apart (the mover's first; ``who`` names them in
        an error: the command line's BOARD1 and BOARD2)."""
        r = self.game.r
        return Position(
            self.game.pairs_of_boards(read_board(mine, r, who[0]), read_board(theirs, r, who[1]))
        )

    def text(self, position: Position) -> str:
        """The position as MOVER;OPPONENT, each board its columns joined by "/"."""
        return self.game.board_text(position.pairs)

    def state_id(self, position: Position) -> int:
        """The canonical state id (the tables' ``state_id``)."""
        return self.game.state_of(position.pairs)

    def scores(self, position: Position) -> tuple[int, int]:
        """The mover's and the opponent's totals."""
        mine, theirs = self.game.scores(position.pairs[None, :])
        return int(mine[0]), int(theirs[0])

    def over(self, position: Position) -> bool:
        """Whether a board is full (the game is over)."""
        return self.game.finished(position.pairs)

    def final_value(self, position: Position) -> float:
        """The mover's value of a finished game (a draw is 1/2 of a win)."""
        return float(self.game.final_values(position.pairs[None, :])[0])

    def final_values(self, position: Position) -> dict[str, float]:
        """A finished game's value in each objective (:data:`FIELDS`' names): 1, 1/2 or 0, and
        the score difference."""
        mine, theirs = self.scores(position)
        diff = float(mine - theirs)
        return {"win": 0.5 + 0.5 * float(np.sign(diff)), "diff": diff}

    def check_die(self, die: int) -> None:
        """UsageError unless ``die`` is a face of the die."""
        if not 1 <= die <= self.faces:
            raise UsageError(f"die must be between 1 and {self.faces}, not {die}")

    def successors(self, position: Position, die: int) -> list[tuple[int, Position]]:
        """Every legal column for ``die`` (1-based, the user's order) with the position the
        opponent then faces (the game's one move: :meth:`Knucklebones.successors`)."""
        return [(c + 1, Position(after)) for c, after in self.game.successors(position.pairs, die)]

    @property
    def evaluator(self) -> Evaluator | None:
        """The board's packaged evaluator where its record says it beat the search on the
        board's held-out exact positions (None: the search's own leaf estimate plays)."""
        from pipeline.games.knucklebones.players.artefacts import packaged_evaluator

        r = self.game.r
        found = packaged_evaluator(r.columns, r.rows, r.faces)
        return found if found is not None and found.trusted else None

    @property
    def player(self) -> str:
        """The searched answer's player, without its depth: ``net`` (the distilled evaluator
        at the leaves) where the board has a trusted one, else ``ours``."""
        return "ours" if self.evaluator is None else "net"

    @property
    def default_depth(self) -> int | None:
        """The depth the board's trusted evaluator was rated at (None: the answer's own)."""
        found = self.evaluator
        return None if found is None else int(found.meta.get("depth", 3))

    @property
    def deeper(self) -> int | None:
        """How deep the board's trusted evaluator searches its close calls (its record's
        ``deeper``; None: no deeper than :attr:`default_depth`)."""
        return self._recorded_int("deeper")

    def player_name(self, depth: int, deeper: int | None, leaves: int | None) -> str:
        """The searched answer's player as it is rated: ``net-d3+5/12000``, ``ours-d4``."""
        from pipeline.games.knucklebones.players.names import player_name

        return player_name(self.player, depth, deeper, leaves)

    @property
    def leaves(self) -> int | None:
        """How far the board's trusted evaluator's close calls go (its record's ``leaves``:
        as far as about that many leaves; None: no bound)."""
        return self._recorded_int("leaves")

    def _recorded_int(self, key: str) -> int | None:
        """The trusted evaluator's record's ``key``, a number (None: no evaluator, or not set)."""
        found = self.evaluator
        value = None if found is None else found.meta.get(key)
        return int(value) if value else None

    def searcher(self) -> Searcher:
        """The search over this board (its transposition table kept across answers)."""
        from pipeline.games.knucklebones.players.search import Searcher

        if self._searcher is None:
            # the search maximises the win chance, then the difference, whatever the objective
            self._searcher = Searcher(board_game(self.game.r), evaluator=self.evaluator)
        return self._searcher

    def _kind(self) -> int:
        from pipeline.games.knucklebones.players.search import NET, OURS

        return OURS if self.evaluator is None else NET

    def evaluate(self, position: Position, depth: int) -> Eval:
        """The search's value of the position before the roll, ``depth`` placements deep."""
        return self.searcher().evaluate(position.pairs, depth, self._kind())

    def searched(self, position: Position, die: int, depth: int) -> list[tuple[int, Eval]]:
        """The search's value of every legal column for ``die`` (1-based, the user's order)."""
        values = self.searcher().move_values(position.pairs, die, depth, self._kind())
        return self._columns(position, values)

    def decided(
        self, position: Position, die: int, depth: int, deeper: int | None, leaves: int | None
    ) -> tuple[int, list[tuple[int, Eval]]]:
        """The board's search player's decision for ``die`` (the player engine's: ``depth``
        deep, ``deeper`` on a close call in this board's objective, as far as ``leaves``):
        (the depth searched, every legal column's value, 1-based in the user's order)."""
        searched, values, _ = self.searcher().decide(
            position.pairs, die, depth, self._kind(), deeper or 0, self.objective != "wins",
            leaves or 0,
        )  # fmt: skip
        return searched, self._columns(position, values)

    def _columns(
        self, position: Position, values: list[tuple[int, Eval]]
    ) -> list[tuple[int, Eval]]:
        """A search's values (by place in the sorted position) by the user's columns."""
        pairs = position.pairs
        srt = np.sort(pairs)
        by_pair = {int(srt[j]): ev for j, ev in values}
        return [(i + 1, by_pair[int(p)]) for i, p in enumerate(pairs) if int(p) in by_pair]

    def book_values(
        self, position: Position, die: int | None
    ) -> tuple[dict[str, float], list[tuple[int, Position, float, float]]] | None:
        """The position's values (``win``, ``diff``) and, with ``die``, every legal column's
        (column, successor, win, diff: the mover's, from the successor's values) from the
        board's opening book, or None unless the position and every successor are in it."""
        from pipeline.games.knucklebones.players.artefacts import packaged_book

        r = self.game.r
        book = packaged_book(r.columns, r.rows, r.faces)
        if book is None:
            return None
        succ = self.successors(position, die) if die is not None else []
        ids = [self.state_id(position), *(self.state_id(p) for _, p in succ)]
        found = book.values(np.array(ids, dtype=np.int64))
        if found is None:
            return None
        win, diff = found
        here = {"win": float(win[0]), "diff": float(diff[0])}
        cols = [
            (c, p, 1.0 - float(win[k + 1]), -float(diff[k + 1])) for k, (c, p) in enumerate(succ)
        ]
        return here, cols

    def end_depth(self, position: Position, leaves: int) -> int | None:
        """Placements until a board is full if no die is removed, where a search that deep
        meets at most about ``leaves`` leaves (each player's dice times their open columns a
        placement); None where it would meet more. At that depth the search reaches the end
        of every line but those a removal prolongs (it says which: ``Eval.exact``)."""
        t, r = self.game.t, self.game.r
        pairs = position.pairs
        mover = r.slots - int(t.mover_size[pairs].sum())
        opponent = r.slots - int(t.opp_size[pairs].sum())
        depth = 2 * mover - 1 if mover <= opponent else 2 * opponent
        open_m = int((t.mover_size[pairs] < r.rows).sum())
        open_o = int((t.opp_size[pairs] < r.rows).sum())
        cost = (r.faces * open_m) ** ((depth + 1) // 2) * (r.faces * open_o) ** (depth // 2)
        return depth if cost <= leaves else None

    def position_of(self, pairs: np.ndarray) -> Position:
        """A position from the facing pairs a game in play keeps (the mover's view)."""
        return Position(np.asarray(pairs, dtype=np.int64))

    def label(self, position: Position, column: int) -> int:
        """The tie rule's label of a column (its pair's place in canonical order; equal pairs
        are one move, the first)."""
        srt = np.sort(position.pairs)
        return int(np.searchsorted(srt, position.pairs[column - 1]))
