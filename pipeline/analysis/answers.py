"""Answers from the built tables: a state's value, and the best move for a roll.

Lookups read a few rows with DuckDB (which pushes the variant and state filters down to the
Parquet row groups) and parse the state with the variant's light codec, so `stb-pipeline expect`
loads neither polars nor the game, and of DuckDB only its compiled engine
(:func:`pipeline.store.engine.engine`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import TableError, TablesMissingError, UsageError
from pipeline.games.registry import Variant
from pipeline.store.engine import engine as _engine
from pipeline.store.layout import settle, table_path, variant_file
from pipeline.store.schema import derived_select

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class Expectation:
    """The value of one state."""

    variant: str
    state_id: int
    tiles: str
    value: float
    objective: str
    dice: int | None


@dataclass(frozen=True)
class MoveAdvice:
    """The best move for a roll, and what every legal move is worth."""

    variant: str
    state_id: int
    tiles: str
    roll: int
    objective: str
    value: float
    """Value after the best move (or the final value when stuck)."""
    best_move: list[int] | None
    """None when no move is legal: the game ends."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Every legal move: move, next_tiles, value, regret, is_best; best first."""
    passes_turn: bool = False
    """True when no move is legal and play goes on with another player (two-player games)."""

    @property
    def moves(self) -> pl.DataFrame:
        """:attr:`rows` as a polars DataFrame (columns move, next_tiles, value, regret, is_best)."""
        import polars as pl

        schema: dict[str, pl.DataType] = {
            "move": pl.List(pl.Int64),
            "next_tiles": pl.String(),
            "value": pl.Float64(),
            "regret": pl.Float64(),
            "is_best": pl.Boolean(),
        }
        return pl.DataFrame(self.rows, schema=schema, orient="row")


@lru_cache(maxsize=1)
def _database() -> Any:
    """One in-memory DuckDB for the process: an answer asks it several questions."""
    return _engine().connect()


def _rows(data_dir: Path, table: str, variant: str, where: str, **params: Any) -> list[dict]:
    """Rows of ``table`` for ``variant`` matching ``where`` (DuckDB, bound parameters)."""
    settle(data_dir)
    path = variant_file(data_dir, table, variant)
    if not path.exists():
        raise TablesMissingError(
            f"{path} does not exist: run `stb-pipeline build --variant {variant}` "
            "(or build with the same custom rule options) first"
        )
    columns = derived_select(table)  # big boxes leave some columns to the reader
    sql = f"select {columns} from read_parquet($path) where variant = $variant and {where}"
    try:
        with _database().cursor() as con:  # a cursor of its own: safe from several threads
            cursor = con.execute(sql, {"path": str(path), "variant": variant, **params})
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    except _engine().Error as exc:
        from pipeline.store.manifest import REBUILD

        first = str(exc).splitlines()[0]
        raise TableError(f"{path} is not a readable table ({first}); {REBUILD}") from None


def _state_row(data_dir: Path, variant: Variant, text: str, extra: dict[str, Any]) -> dict:
    state_id = variant.parse_state(text, **extra)
    found = _rows(data_dir, "states", variant.name, "state_id = $state", state=state_id)
    if not found:
        if not _rows(data_dir, "states", variant.name, "true limit 1"):
            raise TablesMissingError(
                f"{table_path(data_dir, 'states')} has no rows for variant {variant.name!r}: "
                f"run `stb-pipeline build --variant {variant.name}` "
                "(or build with the same custom rule options) first"
            )
        raise UsageError(f"state {text!r} is not a state of variant {variant.name}")
    row = found[0]
    if row["value"] is None:
        raise UsageError(
            f"variant {variant.name} is enumerated but not solved: run "
            f"`stb-pipeline build --variant {variant.name}`"
        )
    return row


def expect(data_dir: Path, variant: Variant, tiles: str, **extra: Any) -> Expectation:
    """The value of the state written ``tiles`` (plus game-specific parts such as p1_score)."""
    row = _state_row(data_dir, variant, tiles, extra)
    return Expectation(
        variant.name, row["state_id"], row["tiles"], row["value"], row["objective"], row.get("dice")
    )


def _moves_from_states(
    data_dir: Path, variant: Variant, state: int, roll: int, best: dict, row: dict
) -> list[dict[str, Any]]:
    """The moves rows of one (state, roll) made from the game's rules and the states table,
    in the moves table's order, for a variant built without its moves table (big boxes write
    it only with ``--moves``); TablesMissingError for a game that cannot."""
    listing = variant.make().moves_after(state, roll)
    if listing is None:
        raise TablesMissingError(
            f"{variant.name} was built without its moves table: build it again with --moves "
            "to see what every move is worth"
        )
    ids = [nxt for _, nxt in listing]
    values = {
        r["state_id"]: r["value"]
        for r in _rows(data_dir, "states", variant.name, "list_contains($ids, state_id)", ids=ids)
    }
    sign = 1.0 if row["maximise"] else -1.0
    out = [
        {
            "move_mask": mask,
            "move": None,
            "next_state_id": nxt,
            "next_tiles": None,
            "value": values[nxt],
            "regret": _regret(best["value"], values[nxt], sign),
            "is_best": mask == best.get("best_move_mask"),
        }
        for mask, nxt in listing
    ]
    # the moves table's order: by regret, the best first among equals, then the move holding
    # the highest tile where two differ (largest mask first: the same order for tile sets)
    out.sort(key=lambda m: m["move_mask"], reverse=True)
    out.sort(key=lambda m: (m["regret"], not m["is_best"]))
    return out


def _regret(best: float, value: float, sign: float) -> float:
    """What a move worth ``value`` loses against the best (``sign`` -1 when minimising);
    never negative, and a plain 0.0 rather than -0.0 for the best move itself."""
    lost = (best - value) * sign
    return lost if lost > 0.0 else 0.0


def best_move(data_dir: Path, variant: Variant, tiles: str, roll: int, **extra: Any) -> MoveAdvice:
    """The best move in state ``tiles`` after ``roll``, with the value and regret of every move."""
    row = _state_row(data_dir, variant, tiles, extra)
    if row["terminal"]:
        raise UsageError(f"state {tiles!r} of {variant.name} is terminal: there is nothing to roll")
    state = row["state_id"]
    # a roll past 32 bits matches no row (and is no number a table column can hold)
    hit = (
        _rows(data_dir, "policy", variant.name, "state_id = $s and roll = $r", s=state, r=roll)
        if abs(roll) < 2**31
        else []
    )
    if not hit:
        rolls = _rows(data_dir, "policy", variant.name, "state_id = $s order by roll", s=state)
        raise UsageError(
            f"roll {roll} is impossible in state {tiles!r} of {variant.name} "
            f"(possible rolls: {rolls[0]['roll']}..{rolls[-1]['roll']})"
        )
    best = hit[0]
    if variant_file(data_dir, "moves", variant.name).exists():
        # By regret (the best first among equals); equal regrets in the tie rule's order: the
        # move holding the highest tile where two differ comes first.
        moves = _rows(
            data_dir,
            "moves",
            variant.name,
            "state_id = $s and roll = $r "
            "order by regret, is_best desc, list_reverse_sort(move) desc nulls last",
            s=state,
            r=roll,
        )
    else:  # a big box built without --moves: rank its moves from the states table
        moves = _moves_from_states(data_dir, variant, state, roll, best, row)
    keep = ("move", "next_tiles", "value", "regret", "is_best")
    best_move = best["best_move"]
    if variant.codec is not None and best.get("best_move_mask") is not None:
        # a streamed build leaves the list columns null: its masks say the same
        best_move = variant.codec.tiles(best["best_move_mask"])
        for m in moves:
            m["move"] = variant.codec.tiles(m["move_mask"])
            m["next_tiles"] = variant.codec.text(m["next_state_id"])
    return MoveAdvice(
        variant.name,
        state,
        row["tiles"]
        if row["tiles"] is not None or variant.codec is None
        else variant.codec.text(state),
        roll,
        row["objective"],
        best["value"],
        best_move,
        [{k: m[k] for k in keep} for m in moves],
        passes_turn=best_move is None and best["next_state_id"] is not None,
    )
