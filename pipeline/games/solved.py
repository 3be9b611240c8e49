"""A variant's game, its graph and (once solved) its solution, computed once and shared."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline import progress
from pipeline.games.base import Game
from pipeline.games.registry import Variant
from pipeline.graph import Graph
from pipeline.solve.rank_order import Solution, solve_rank_order
from pipeline.solve.value_iteration import solve_value_iteration

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Solved:
    """A variant's game, graph and (once solved) solution, shared by the stages of one run."""

    variant: Variant
    game: Game
    graph: Graph
    solution: Solution | None = None
    exact: bool = False
    """Also solve in exact fractions, check the float values against them, store both."""
    seconds: dict[str, float] = field(default_factory=dict)
    #: Seeds of every random generator used for this variant's tables (hooks add theirs);
    #: recorded in manifest.json.
    seeds: dict[str, int] = field(default_factory=dict)
    _states: pl.DataFrame | None = None

    def states(self) -> pl.DataFrame:
        """Readable description of every state, in graph order (computed once)."""
        if self._states is None:
            self._states = self.game.describe_states(self.graph.state_id)
        return self._states

    def solve(self) -> Solution:
        """Solve the graph once."""
        if self.solution is None:
            t0 = time.perf_counter()
            # Graphs with cycles have no rank order: iterate to the fixed point.
            name = f"{self.variant.name}: "
            if self.graph.cyclic:
                with progress.task(name + "value iteration", unit="sweeps") as job:

                    def sweep(done: int, change: float) -> None:
                        job.update(done, note=f"last change {change:.1e}")

                    self.solution = solve_value_iteration(self.graph, progress=sweep)
            else:
                with progress.task(name + "rank order", unit="ranks") as job:
                    self.solution = solve_rank_order(
                        self.graph, progress=lambda done, total: job.update(done, total=total)
                    )
            self.seconds["solve"] = time.perf_counter() - t0
        return self.solution
