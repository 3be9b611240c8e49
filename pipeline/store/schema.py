"""One schema per table, whatever variants it holds (columns that do not apply are null).

Every write puts these columns first, in this order and with these types, so downstream code
reads the same columns from ``states.parquet`` whether or not, say, Double Shutter was built.
A game may add columns of its own after them. `data/README.md` says what each column means
(:mod:`pipeline.analysis.schema_docs`), and the `schema` contract checks the files against this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

_TILES = "list[i8]"

#: Table -> (column, type) in file order. Types: str, i8, i16, i32, i64, f64, bool, list[i8].
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "states": (
        ("variant", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("open_tiles", _TILES),
        ("n_open", "i16"),
        ("open_sum", "i32"),
        ("score", "i64"),
        ("terminal", "bool"),
        ("rank", "i32"),
        ("objective", "str"),
        ("maximise", "bool"),
        ("value", "f64"),
        ("dice", "i16"),
        ("choice_options", "i16"),
        ("residual", "f64"),
        ("value_exact", "str"),
        ("player", "i8"),
        ("p1_score", "i16"),
        ("state", "str"),
        ("front_tiles", _TILES),
        ("back_tiles", _TILES),
        ("exposed_sum", "i32"),
        ("mover_score", "i32"),
        ("opponent_score", "i32"),
        ("players", "i8"),
        ("best_score", "i64"),
        ("best_count", "i8"),
        ("share_holder", "f64"),
        ("share_beaten", "f64"),
        ("share_1", "f64"),
        ("share_2", "f64"),
        ("share_3", "f64"),
        ("share_4", "f64"),
        ("share_5", "f64"),
        ("share_6", "f64"),
    ),
    "edges": (
        ("variant", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("dice", "i16"),
        ("roll", "i16"),
        ("prob", "f64"),
        ("move", _TILES),
        ("next_state_id", "i64"),
        ("next_tiles", "str"),
        ("reward", "f64"),
        ("sign", "i8"),
        ("move_mask", "i32"),
        ("kind", "str"),
    ),
    "policy": (
        ("variant", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("roll", "i16"),
        ("stuck", "bool"),
        ("best_move", _TILES),
        ("next_state_id", "i64"),
        ("next_tiles", "str"),
        ("value", "f64"),
        ("n_optimal", "i16"),
        ("n_moves", "i16"),
        ("best_move_mask", "i32"),
        ("kind", "str"),
    ),
    "moves": (
        ("variant", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("roll", "i16"),
        ("move", _TILES),
        ("next_state_id", "i64"),
        ("next_tiles", "str"),
        ("value", "f64"),
        ("regret", "f64"),
        ("is_best", "bool"),
        ("move_mask", "i32"),
    ),
    "reach": (
        ("variant", "str"),
        ("strategy", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("reach_prob", "f64"),
        ("end_prob", "f64"),
        ("value", "f64"),
    ),
    "node_reach": (
        ("variant", "str"),
        ("strategy", "str"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("roll", "i16"),
        ("reach_prob", "f64"),
        ("move", _TILES),
        ("next_state_id", "i64"),
        ("kind", "str"),
    ),
    "decisions": (
        ("variant", "str"),
        ("kind", "str"),
        ("decision", "i64"),
        ("ply", "i16"),
        ("state_id", "i64"),
        ("board", "str"),
        ("roll", "i16"),
        ("column_number", "i16"),
        ("next_state_id", "i64"),
        ("pick_greedy", "bool"),
        ("pick_seed_d4", "bool"),
        ("pick_ours_d2", "bool"),
        ("games", "i64"),
        ("seed", "i64"),
    ),
}


#: Columns only the streamed build fills (big custom boxes): the move as a bitmask of tiles
#: (bit t - 1 for tile t), standing in for the list and text columns it leaves null.
MASK_COLUMNS = frozenset({"best_move_mask", "move_mask"})


#: Columns a file may leave null because they follow from the row's other columns: the policy
#: of a box built without a graph (13 tiles or more: up to hundreds of millions of rows) leaves out
#: the best move's next state (the state's tiles less the move's: state_id XOR best_move_mask)
#: whether the roll is stuck (no best move) and the row's kind (`end` when stuck, else `move`), a
#: quarter less to encode and to store. Every
#: reader fills them in from these DuckDB expressions (:func:`derived_select`) or their polars
#: twins (:func:`derived_polars`); a row that has the column keeps it.
DERIVED: dict[str, dict[str, str]] = {
    "policy": {
        "next_state_id": "coalesce(next_state_id, xor(state_id, best_move_mask))",
        "stuck": "coalesce(stuck, best_move_mask is null)",
        # a box is one player's: a roll without a move ends the game
        "kind": "coalesce(kind, case when best_move_mask is null then 'end' else 'move' end)",
    },
}


def derived_select(table: str) -> str:
    """A DuckDB select list of every column of ``table`` with its :data:`DERIVED` columns
    filled in (``*`` when it has none)."""
    filled = DERIVED.get(table)
    if not filled:
        return "*"
    return "* replace (" + ", ".join(f"{sql} as {col}" for col, sql in filled.items()) + ")"


#: DuckDB's name of each column type code.
_SQL_TYPES = {
    "str": "varchar",
    "i8": "tinyint",
    "i16": "smallint",
    "i32": "integer",
    "i64": "bigint",
    "f64": "double",
    "bool": "boolean",
}


def missing_select(table: str, present: list[str]) -> str:
    """DuckDB select items (``, null::type as col`` each) for the columns of ``table`` that
    none of its files hold: a lean file alone (the full Knucklebones game's states) still
    reads as the table's one schema. Empty when every column is there."""
    items = []
    for name, code in COLUMNS.get(table, ()):
        if name not in present:
            kind = _SQL_TYPES[code[5:-1]] + "[]" if code.startswith("list[") else _SQL_TYPES[code]
            items.append(f"null::{kind} as {name}")
    return "".join(f", {item}" for item in items)


def derived_polars(table: str, columns: list[str]) -> list[pl.Expr]:
    """The polars expressions that fill in ``table``'s :data:`DERIVED` columns (for a frame
    with ``columns``; none when it lacks what they need)."""
    import polars as pl

    if table != "policy" or not {"state_id", "best_move_mask", "next_state_id"} <= set(columns):
        return []
    mask = pl.col("best_move_mask")
    filled = [
        pl.coalesce("next_state_id", pl.col("state_id").xor(mask.cast(pl.Int64))),
        pl.coalesce("stuck", mask.is_null()).alias("stuck"),
    ]
    if "kind" in columns:
        kind = pl.when(mask.is_null()).then(pl.lit("end")).otherwise(pl.lit("move"))
        filled.append(pl.coalesce("kind", kind).alias("kind"))
    return filled


def _dtype(code: str) -> pl.DataType:
    import polars as pl

    scalar = {
        "str": pl.String(),
        "i8": pl.Int8(),
        "i16": pl.Int16(),
        "i32": pl.Int32(),
        "i64": pl.Int64(),
        "f64": pl.Float64(),
        "bool": pl.Boolean(),
    }
    if code.startswith("list["):
        return pl.List(scalar[code[5:-1]])
    return scalar[code]


def empty_frame(table: str) -> pl.DataFrame | None:
    """An empty frame with ``table``'s columns (None for a table without a fixed schema)."""
    import polars as pl

    if table not in COLUMNS:
        return None
    return pl.DataFrame(schema={name: _dtype(code) for name, code in COLUMNS[table]})


def arrow_fields(table: str) -> list[tuple[str, object]]:
    """``table``'s columns as (name, pyarrow type), for writers that stream Arrow batches."""
    import pyarrow as pa

    scalar = {
        "str": pa.string(),
        "i8": pa.int8(),
        "i16": pa.int16(),
        "i32": pa.int32(),
        "i64": pa.int64(),
        "f64": pa.float64(),
        "bool": pa.bool_(),
    }
    return [
        (name, pa.list_(scalar[code[5:-1]]) if code.startswith("list[") else scalar[code])
        for name, code in COLUMNS[table]
    ]
