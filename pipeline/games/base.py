"""What every game (a variant's rules) offers the pipeline, besides its graph."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipeline.errors import UsageError
from pipeline.graph import Graph
from pipeline.solve.rank_order import Solution

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Streamed:
    """A game's tables solved and produced without a graph, a batch at a time.

    Each item of ``batches`` holds, for some of ``tables``, a batch of numpy columns (as an
    attribute or key named after the table; masked arrays for nulls). Columns a batch lacks are
    in ``constants`` (per table) or null. ``start_value`` and ``counts`` answer once the batches
    are consumed (the solve runs as they are).
    """

    tables: tuple[str, ...]
    batches: Iterator[Any]
    constants: dict[str, dict[str, Any]]
    options: dict[str, dict[str, Any]]
    n_states: int
    start_value: Callable[[], float]
    counts: Callable[[], tuple[int, int]]
    """(decision nodes, legal moves) met by the solve."""
    what: str = "solving layer by layer"
    """The build's progress line while the batches are consumed."""
    note: str = "solved layer by layer without a graph"
    """The build's note on the variant (the game may update it as the batches are consumed)."""
    extra: Callable[[], dict[str, pl.DataFrame]] | None = None
    """Tables for the shared files (e.g. ``summary``), made once the batches are consumed."""
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The columns written, per table, in the schema's order (a table not named: all of them,
    nullable). A table of billions of rows leaves out the columns it would write as nulls (each
    costs as much to encode as a column of values), and the columns it names are never null,
    so they are written as Parquet's required columns (no definition levels to encode).
    Readers that take the union of the shared files and the variant's own by name see the
    columns left out as nulls, as if they were written."""


@dataclass(frozen=True)
class LegalMoves:
    """Every legal move of one state after some rolls (asked in increasing order), as arrays of
    one row per move: grouped by roll, increasing, the largest label first within a roll (the
    tie rule's order). A move is worth its successor's value (:attr:`Game.move_value`)."""

    roll: np.ndarray
    """int64: the roll (or die) each move answers."""
    label: np.ndarray
    """int64: the move's label (the tie rule picks the largest among equal values)."""
    next: np.ndarray
    """int64: the state id the move leads to."""


@dataclass(frozen=True)
class Stuck:
    """What happens when a roll leaves the mover no legal move, and what it is worth to the
    mover: ``value`` where the rules alone say (a final score), else ``offset + scale *``
    the ``column`` of the ``states`` row of ``next`` (a turn passed: the mover's payoff there)."""

    kind: str
    """``end`` (the game is over) or ``pass`` (the next player plays)."""
    next: int | None
    """The state play goes on from (a pass), else None."""
    value: float | None
    """The mover's value, where the rules alone give it; None: read it from ``next``."""
    column: str = "value"
    offset: float = 0.0
    scale: float = 1.0


class Named(Protocol):
    """Anything with a name (a variant, as a hook sees it)."""

    @property
    def name(self) -> str: ...


class SolvedView(Protocol):
    """What a game's hooks see of its solved variant.

    :class:`pipeline.games.solved.Solved` is one; the hooks name this instead, so that a game
    does not depend on the module that solves it (which depends on the game).
    """

    @property
    def variant(self) -> Named: ...

    @property
    def game(self) -> Game: ...

    @property
    def graph(self) -> Graph: ...

    def solve(self) -> Solution:
        """The graph's solution (solved once)."""
        ...

    def states(self) -> pl.DataFrame:
        """Readable description of every state, in graph order."""
        ...


class Game(ABC):
    """A rule set that can be turned into a graph and can describe its states and moves.

    Subclasses keep all rules of one game family; the solvers only ever see :class:`Graph`.
    """

    #: Objective names written to the tables: "shut", "score", "target", "wins", ...
    objective: str = "shut"
    #: Whether `edges` should be skipped because the table would be too large to be useful.
    skip_edges: bool = False
    #: Whether play can come back to a position (Knucklebones removes dice): such a graph is
    #: solved by value iteration, and `--exact` (rank-order fractions) cannot solve it.
    cyclic: bool = False

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

    def extra_tables(self, solved: SolvedView) -> dict[str, pl.DataFrame]:
        """Tables this game adds to `build` beyond states, edges, policy and moves.

        By default its headline figures (:meth:`summary`) as the `summary` table.
        """
        frame = self.summary(solved.graph, solved.solve())
        return {} if frame is None or frame.height == 0 else {"summary": frame}

    #: Whether `build` runs the strategies stage (:meth:`rule_search`) for this game: only
    #: where the search is cheap beside the build; `stb-pipeline strategies` runs it anyway.
    search_in_build: bool = False
    #: Whether :meth:`rule_search` searches anything for this game (`stb-pipeline strategies`
    #: refuses the others before any work).
    searches_rules: bool = False

    def rule_search(self, solved: SolvedView) -> dict[str, pl.DataFrame]:
        """The strategies stage's tables: the rules a person can remember, searched and priced
        (``strategy_search``, ``strategy_exceptions``); none for a game without such rules."""
        return {}

    def tile_view(self, g: Graph) -> tuple[np.ndarray, np.ndarray] | None:
        """For tile strategies: the face value of each bit of a move label and each state's
        final score; None when the game has no tiles to shut."""
        return None

    def simulate(
        self, solved: SolvedView, games: int, seed: int, names: Any = None, progress: Any = None
    ) -> tuple[list[Any], pl.DataFrame]:
        """Monte Carlo benchmark of the game's strategies: (results, `benchmarks` rows)."""
        raise UsageError(f"variant {solved.variant.name!r} has no strategies to benchmark")

    #: Where :meth:`stream` can solve (``build --device``): the CPU, and ``cuda`` for a game
    #: whose stream takes a ``device`` keyword (the large Knucklebones boards).
    devices: tuple[str, ...] = ("cpu",)

    def stream(self, tables: Sequence[str]) -> Streamed | None:
        """A graph-free build of ``tables`` (some of states, policy, moves and edges; the solve
        runs whichever are asked), for games too big to hold as a graph; None: build from
        :meth:`graph`."""
        return None

    # -- answers about one position (pipeline.answer): the rules, the tables give the values --

    #: The ``states`` columns an answer reports beside the value (the N-player shares).
    answer_columns: tuple[str, ...] = ()
    #: How a move's value follows from its successor's value v: ``offset + scale * v`` (a game
    #: whose successor is seen by the opponent, Knucklebones: 1 - v, or -v).
    move_value: tuple[float, float] = (0.0, 1.0)

    def roll_chances(self, state_id: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        """Each number of dice the rules allow in ``state_id`` (fewest first), with its rolls
        as (total, ways, denominator); empty where nothing is rolled."""
        raise UsageError(f"{type(self).__name__} positions are not answered by rolls")

    def legal_moves(self, state_id: int, rolls: Sequence[int]) -> LegalMoves:
        """Every legal move of ``state_id`` after each of ``rolls`` (increasing; see
        :class:`LegalMoves`)."""
        raise UsageError(f"{type(self).__name__} positions are not answered by rolls")

    def move_tiles(self, label: int) -> list[int]:
        """A move label as the list the tables write in ``move`` (the tiles shut)."""
        raise UsageError(f"{type(self).__name__} positions are not answered by rolls")

    def state_text(self, state_id: int) -> str:
        """The ``tiles`` text of one state, as the states table writes it (a light override
        answers without polars)."""
        return str(self.describe_states(np.array([state_id], dtype=np.int64))["tiles"][0])

    def state_code(self, state_id: int) -> str | None:
        """Another way the tables write a state, where the game has one (Double Shutter: its
        digits, the ``state`` column); None otherwise."""
        return None

    def position_fields(self, state_ids: np.ndarray) -> dict[str, np.ndarray]:
        """What names a position besides its tiles, by state id (the N-player games' seat, best
        score so far and how many share it; 0 where it does not apply); none by default."""
        return {}

    def state_fields(self, state_id: int) -> dict[str, int | None]:
        """:meth:`position_fields` of one state, None where a field does not apply (a few
        microseconds: every answer shows them)."""
        return {}

    def stuck(self, state_id: int) -> Stuck:
        """What a roll without a legal move means in ``state_id``."""
        raise UsageError(f"{type(self).__name__} positions are not answered by rolls")
