"""The Python API for downstream code: the solved tables and lookups, without the CLI.

>>> import pipeline
>>> pipeline.expect("classic", "123456789")          # P(shut) from the full box
0.0714316223056...
>>> pipeline.best_move("classic", "12345", 7)
[3, 4]
>>> pipeline.load_table("policy", variant="classic").height
5621

Every function reads the Parquet tables under ``data_dir`` (default: ``$STB_DATA_DIR`` or
``data/``), which `stb-pipeline build` writes. Errors are :class:`pipeline.errors.PipelineError`
subclasses with a one-line message: :class:`~pipeline.errors.UsageError` for a bad variant,
state or roll, :class:`~pipeline.errors.TablesMissingError` when the tables are not built.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import polars as pl

from pipeline.analysis import sql
from pipeline.answer.answers import for_dir
from pipeline.answer.model import Answer, BoardAnswer
from pipeline.errors import TablesMissingError
from pipeline.games.registry import Variant
from pipeline.games.tiles import position_extra
from pipeline.store import layout, readers, tables
from pipeline.store.directory import resolve
from pipeline.store.layout import default_data_dir

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = [
    "best_move",
    "board",
    "dataset",
    "default_data_dir",
    "expect",
    "knucklebones_column",
    "load_table",
    "move_values",
    "position",
    "query",
    "scan",
]


def _dir(data_dir: str | Path | None) -> Path:
    return default_data_dir() if data_dir is None else Path(data_dir)


def _variant(variant: str | Variant, data_dir: str | Path | None) -> Variant:
    """The variant named: registered, named by its rules, or built under its own name in the
    data directory (the CLI's and the server's resolution: :mod:`pipeline.store.directory`)."""
    return variant if isinstance(variant, Variant) else resolve(variant, _dir(data_dir))


P = ParamSpec("P")
R = TypeVar("R")


def _hinted(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, whose "not built" error leads with the folder it read when that folder holds no
    table at all: most likely the program runs from another folder than the one built into."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def hinted(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except TablesMissingError as exc:
            given = signature.bind_partial(*args, **kwargs).arguments.get("data_dir")
            hint = layout.built_elsewhere(_dir(given), "data_dir=DIR, or STB_DATA_DIR=DIR,")
            if not hint:
                raise
            raise TablesMissingError(f"{hint}: {exc}") from None

    return hinted


def _tiles_text(tiles: str | Iterable[int]) -> str:
    """Tiles as the CLI writes them: ``"12345"``, ``"1,2,10"``, or a list of tile numbers."""
    if isinstance(tiles, str):
        return tiles
    return ",".join(str(int(t)) for t in tiles)


@_hinted
def load_table(
    name: str, variant: str | None = None, data_dir: str | Path | None = None
) -> pl.DataFrame:
    """Table ``name`` (``states``, ``policy``, ``moves``, ``edges``, ...) as a polars DataFrame.

    With ``variant``, only that variant's rows. Raises TablesMissingError when the table or the
    variant has not been built.
    """
    return tables.read_table(_dir(data_dir), name, variant)


@_hinted
def scan(
    table: str, variant: str | None = None, data_dir: str | Path | None = None
) -> pl.LazyFrame:
    """Table ``table`` over every variant's files as a polars LazyFrame (only ``variant``'s
    rows when given): the columns and rows of the catalog's view (``stb.duckdb``), a big box's
    tile columns filled in from its bitmasks. Filters and column choices reach the files.

    >>> import pipeline, polars as pl
    >>> pipeline.scan("policy", "classic").filter(pl.col("tiles") == "12345").collect().height
    11
    """
    return readers.scan(_dir(data_dir), table, variant)


@_hinted
def dataset(
    table: str, variant: str | None = None, data_dir: str | Path | None = None
) -> ds.Dataset:
    """Table ``table`` over every variant's files as a pyarrow dataset (only ``variant``'s rows
    when given), with the catalog's columns in its order and types. A dataset reads what the
    files store: the columns a big box leaves to its readers (tile lists and texts, its
    policy's next state, ``stuck`` and ``kind``) are null here, where :func:`scan` fills them in.

    >>> import pipeline
    >>> pipeline.dataset("states", "classic").count_rows()
    512
    """
    return readers.dataset(_dir(data_dir), table, variant)


@_hinted
def expect(
    variant: str | Variant,
    tiles: str | Iterable[int],
    *,
    p1_score: int | None = None,
    player: int | None = None,
    best_score: int | None = None,
    best_count: int | None = None,
    data_dir: str | Path | None = None,
) -> float:
    """The value of a state under optimal play, per the variant's objective.

    P(shut) for ``classic``, the expected final score for ``classic-score``, ... ``tiles`` are the
    open tiles (``"12345"``, ``"1,2,10"`` or ``[1, 2, 10]``); ``p1_score`` picks player 2's state
    in the two-player game, and ``player``, ``best_score``, ``best_count`` a position of a game
    of N players in turn (the seat to move, the lowest score before it and how many share it).
    """
    extra = position_extra(p1_score, player, best_score, best_count)
    found = for_dir(_dir(data_dir)).expect(_variant(variant, data_dir), _tiles_text(tiles), **extra)
    return float(found.value)


@_hinted
def best_move(
    variant: str | Variant,
    tiles: str | Iterable[int],
    roll: int,
    *,
    p1_score: int | None = None,
    player: int | None = None,
    best_score: int | None = None,
    best_count: int | None = None,
    data_dir: str | Path | None = None,
) -> list[int] | None:
    """The tiles to shut after rolling ``roll`` in a state, or None when no move is legal.

    Ties between equally good moves go to the move holding the highest tile where they differ.
    """
    found = position(
        variant, tiles, roll, p1_score=p1_score, player=player, best_score=best_score,
        best_count=best_count, data_dir=data_dir,
    )  # fmt: skip
    return None if found.best_move is None else [int(t) for t in found.best_move]


@_hinted
def move_values(
    variant: str | Variant,
    tiles: str | Iterable[int],
    roll: int,
    *,
    p1_score: int | None = None,
    player: int | None = None,
    best_score: int | None = None,
    best_count: int | None = None,
    data_dir: str | Path | None = None,
) -> pl.DataFrame:
    """Every legal move after ``roll``: move, next_tiles, value, regret, is_best; best first."""
    found = position(
        variant, tiles, roll, p1_score=p1_score, player=player, best_score=best_score,
        best_count=best_count, data_dir=data_dir,
    )  # fmt: skip
    schema: dict[str, pl.DataType] = {
        "move": pl.List(pl.Int64),
        "next_tiles": pl.String(),
        "value": pl.Float64(),
        "regret": pl.Float64(),
        "is_best": pl.Boolean(),
    }
    rows = [(m.move, m.next_tiles, m.value, m.regret, m.best) for m in found.moves]
    return pl.DataFrame(rows, schema=schema, orient="row")


@_hinted
def position(
    variant: str | Variant,
    tiles: str | Iterable[int],
    roll: int | None = None,
    *,
    p1_score: int | None = None,
    player: int | None = None,
    best_score: int | None = None,
    best_count: int | None = None,
    data_dir: str | Path | None = None,
) -> Answer:
    """Everything about one position, as `serve` shows it: the state and its value, every number
    of dice with its value, every roll's best move, and with ``roll`` every legal move ranked
    (:class:`pipeline.answer.model.Answer`; ``.to_json()`` is the server's JSON)."""
    extra = position_extra(p1_score, player, best_score, best_count)
    return for_dir(_dir(data_dir)).position(
        _variant(variant, data_dir), _tiles_text(tiles), roll=roll, **extra
    )


@_hinted
def board(
    variant: str | Variant,
    position: str | None = None,
    die: int | None = None,
    *,
    depth: int | None = None,
    data_dir: str | Path | None = None,
) -> BoardAnswer:
    """A Knucklebones position (``"MOVER;OPPONENT"``, e.g. ``"44_/1__/___;___/3__/___"``;
    None: the empty boards) and with ``die`` every legal column ranked: exact from the tables
    where the variant is built under ``data_dir``, else the search's estimate ``depth``
    placements deep (:class:`pipeline.answer.model.BoardAnswer`)."""
    return for_dir(_dir(data_dir)).board(_variant(variant, data_dir), position, die, depth)


@_hinted
def knucklebones_column(
    board: str,
    opponent: str,
    die: int,
    *,
    depth: int | None = None,
    variant: str | None = None,
    data_dir: str | Path | None = None,
) -> BoardAnswer:
    """The best column for ``die`` on ``board`` facing ``opponent`` (boards as `knucklebones
    solve` reads them, e.g. ``"44_/1__/___"``), with every legal column's value: the one
    answer of :func:`board` (`knucklebones solve` prints it).

    Where the board's exact tables are built under ``data_dir`` (the full game by `build
    --variant knucklebones --variant knucklebones-score --device cuda`, or a smaller board), the
    values are looked up and exact (``result.tables`` names the variants read; both the win
    probability and the score difference where both objectives are built); otherwise they are
    the opening book's (exact, ``result.source == "book"``), the search's to the end of every
    line (exact, ``"end"``), or its estimate ``depth`` placements deep (``"search"``; None: the
    board's player's depth, ``result.player`` says which). ``variant``
    picks a board and objective other than the full game's P(win) (e.g.
    ``"knucklebones-3x2"``); the best column is the tie rule's pick in its objective.
    """
    from pipeline.apps.knucklebones.position import solve

    return solve(board, opponent, die, depth, variant, _dir(data_dir))


@_hinted
def query(
    name: str, variant: str | None = None, data_dir: str | Path | None = None, **params: Any
) -> pl.DataFrame:
    """Run the analysis query ``queries/NAME.sql`` (see `stb-pipeline query --list`)."""
    return sql.run_query(name, _dir(data_dir), variant=variant, **params)
