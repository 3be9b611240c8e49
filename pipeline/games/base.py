"""What every game (a variant's rules) offers the pipeline, besides its graph."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.solvers.graph import Graph
from pipeline.solvers.rank_order import Solution

if TYPE_CHECKING:
    import polars as pl


class Game(ABC):
    """A rule set that can be turned into a graph and can describe its states and moves.

    Subclasses keep all rules of one game family; the solvers only ever see :class:`Graph`.
    """

    #: Objective names written to the tables: "shut", "score", "target", "wins", ...
    objective: str = "shut"
    #: Whether `edges` should be skipped because the table would be too large to be useful.
    skip_edges: bool = False

    @abstractmethod
    def rules(self) -> dict[str, Any]:
        """The rule set as plain JSON-able data (written to every table's metadata)."""

    @abstractmethod
    def graph(self) -> Graph:
        """The game in array form."""

    @abstractmethod
    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Readable columns for the given state ids (one row each, same order): at least
        ``tiles`` (str)."""

    @abstractmethod
    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """The move labels as lists of tiles (null for a pass)."""

    @abstractmethod
    def parse_state(self, text: str, **extra: Any) -> int:
        """The canonical state id of a state written as the user writes it; UsageError if bad."""

    @abstractmethod
    def start_state(self) -> int:
        """Canonical id of the state a game starts from."""

    def choice_name(self) -> str:
        """Column name for the pre-roll choice."""
        return "dice"

    def summary(self, graph: Graph, solution: Solution) -> pl.DataFrame | None:
        """Headline figures of the solved game for `summary.parquet`, or None for none.

        Columns: figure (str), objective (str), parameter (Int32, nullable), value (float64).
        """
        return None
