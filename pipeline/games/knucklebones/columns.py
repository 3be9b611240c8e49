"""One Knucklebones position and the columns a die can go in, for the answers of every face
(:mod:`pipeline.answer`): the position as the user writes it (MOVER;OPPONENT, the mover's board
first, columns in the user's order), each legal column's successor as the opponent sees it, and
the search's values where no table is built.

The values of exact tables are looked up by the answer layer; a column is worth its successor's
value seen from the other side (:attr:`BoardRules.move_value`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import Knucklebones, read_board

if TYPE_CHECKING:
    from pipeline.games.knucklebones.search import Eval, Searcher


@dataclass(frozen=True)
class Position:
    """Two boards as facing column pairs, in the user's column order."""

    pairs: np.ndarray


class BoardRules:
    """The board rules of one Knucklebones game, as the answers use them."""

    def __init__(self, game: Knucklebones) -> None:
        self.game = game
        self._searcher: Searcher | None = None

    @property
    def columns(self) -> int:
        return self.game.r.columns

    @property
    def rows(self) -> int:
        return self.game.r.rows

    @property
    def faces(self) -> int:
        return self.game.r.faces

    @property
    def objective(self) -> str:
        return self.game.r.objective

    @property
    def move_value(self) -> tuple[float, float]:
        """A column is worth ``offset + scale * value(successor)``: the successor is the
        opponent's position (1 - P(win), or minus the expected difference)."""
        return (1.0, -1.0) if self.objective == "wins" else (0.0, -1.0)

    def start(self) -> Position:
        """Both boards empty."""
        return Position(np.zeros(self.columns, dtype=np.int64))

    def read(self, text: str) -> Position:
        """A position written MOVER;OPPONENT (each board as `knucklebones solve` reads it);
        UsageError for anything else, or for a die standing on both boards of a column."""
        if text.count(";") != 1:
            raise UsageError(f"board {text[:60]!r}: write the two boards as MOVER;OPPONENT")
        mine, theirs = text.split(";")
        r = self.game.r
        return Position(
            self.game.pairs_of_boards(
                read_board(mine, r, "mover"), read_board(theirs, r, "opponent")
            )
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

    def check_die(self, die: int) -> None:
        """UsageError unless ``die`` is a face of the die."""
        if not 1 <= die <= self.faces:
            raise UsageError(f"die must be between 1 and {self.faces}, not {die}")

    def successors(self, position: Position, die: int) -> list[tuple[int, Position]]:
        """Every legal column for ``die`` (1-based, the user's order) with the position the
        opponent then faces (the game's one move: :meth:`Knucklebones.successors`)."""
        return [(c + 1, Position(after)) for c, after in self.game.successors(position.pairs, die)]

    def searcher(self) -> Searcher:
        """The search over this board (its transposition table kept across answers)."""
        from pipeline.games.knucklebones.game import KnuckleRules
        from pipeline.games.knucklebones.search import Searcher

        if self._searcher is None:
            r = self.game.r
            # the search maximises the win chance, then the difference, whatever the objective
            self._searcher = Searcher(Knucklebones(KnuckleRules(r.columns, r.rows, r.faces)))
        return self._searcher

    def evaluate(self, position: Position, depth: int) -> Eval:
        """The search's value of the position before the roll, ``depth`` placements deep."""
        return self.searcher().evaluate(position.pairs, depth)

    def searched(self, position: Position, die: int, depth: int) -> list[tuple[int, Eval]]:
        """The search's value of every legal column for ``die`` (1-based, the user's order)."""
        from pipeline.games.knucklebones.search import OURS

        pairs = position.pairs
        srt = np.sort(pairs)
        values = self.searcher().move_values(pairs, die, depth, OURS)
        by_pair = {int(srt[j]): ev for j, ev in values}
        return [(i + 1, by_pair[int(p)]) for i, p in enumerate(pairs) if int(p) in by_pair]

    def label(self, position: Position, column: int) -> int:
        """The tie rule's label of a column (its pair's place in canonical order; equal pairs
        are one move, the first)."""
        srt = np.sort(position.pairs)
        return int(np.searchsorted(srt, position.pairs[column - 1]))
