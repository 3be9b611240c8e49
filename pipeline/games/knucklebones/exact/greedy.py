"""Greedy play against a perfect opponent, exactly: what the ``greedy`` player (the move with
the largest immediate change of the score difference, :func:`pipeline.games.knucklebones.rules.
gain`, ties drawn among the moves: two columns holding the same pair are one move, as the
player engine draws, :mod:`pipeline.games.knucklebones.players.engine`) wins against the
opponent who plays perfectly against it, its best response.

Greedy's policy is fixed and the opponent's best answer to it is a solve: the value of every
position with the opponent to move (W, the best move) and with greedy to move (G, the mean
over greedy's tied moves), each reading the other's values at the successors. On the full
game that is twice a solve's bounds, run on the GPU
(:func:`pipeline.games.knucklebones.exact.gpu.greedy_solve`); the tests' plain CPU solve
(``tests/support/knucklebones_greedy.py``) is the same definition written with the game's own
moves, for small boards: what the GPU's kernel is tested against.

A draw counts 1/2. Greedy moving first wins ``G(start)``; moving second ``1 - W(start)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipeline.games.knucklebones.game import KnuckleRules


@dataclass(frozen=True)
class GreedyValue:
    """Greedy against its best response from the empty boards: bounds of each value."""

    rules: KnuckleRules
    greedy_to_move: tuple[float, float]
    """G(start): greedy moving first, its value (lower, upper bound)."""
    perfect_to_move: tuple[float, float]
    """W(start): the perfect player moving first, its value against greedy."""
    tolerance: float
    converged: bool
    """Whether every bound met the tolerance (False: cut short, the bounds still hold)."""
    sweeps: int
    seconds: float
    sweep_seconds: float
    dtype: str
    backend: str

    @property
    def offset(self) -> float:
        return 1.0 if self.rules.objective == "wins" else 0.0

    @property
    def greedy_first(self) -> tuple[float, float]:
        """Greedy's value moving first (its win chance for ``wins``), lower and upper bound."""
        return self.greedy_to_move

    @property
    def greedy_second(self) -> tuple[float, float]:
        """Greedy's value moving second: the other side of the perfect player's."""
        lo, hi = self.perfect_to_move
        return self.offset - hi, self.offset - lo

    def record(self) -> dict[str, Any]:
        """The result as plain data (JSON)."""
        out = asdict(self)
        out["rules"] = asdict(self.rules)
        out["greedy_first"] = list(self.greedy_first)
        out["greedy_second"] = list(self.greedy_second)
        return out
