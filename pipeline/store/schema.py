"""One schema per table, whatever variants it holds (columns that do not apply are null).

Every write puts these columns first, in this order and with these types, so downstream code
reads the same columns from ``states.parquet`` whether or not, say, Double Shutter was built.
A game may add columns of its own after them. `data/README.md` says what each column means
(:mod:`pipeline.analysis.schema_docs`), and the `schema` contract checks the files against this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

_TILES = "list[i8]"

#: Key-value metadata of every table file: the rule sets of its variants (JSON by variant) and
#: the version of the package that wrote it.
RULES_KEY = b"stb.rules"
VERSION_KEY = b"stb.version"
#: Key-value metadata of a file written with some of its table's columns only (a lean table:
#: JSON list of the columns it holds, in the table's order; the others read as null).
COLUMNS_KEY = b"stb.columns"

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
        *((f"share_{k}", "f64") for k in range(1, 7)),
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
    "strategy_search": (
        ("variant", "str"),
        ("objective", "str"),
        ("kind", "str"),
        ("size", "i8"),
        ("rank", "i16"),
        ("rule", "str"),
        ("spec", "str"),
        ("one_die_at_most", "i16"),
        ("value", "f64"),
        ("gap", "f64"),
        ("p_shut", "f64"),
        ("expected_score", "f64"),
        ("equivalent", "i32"),
        ("searched", "i64"),
        ("policies", "i64"),
    ),
    "strategy_exceptions": (
        ("variant", "str"),
        ("objective", "str"),
        ("size", "i8"),
        ("spec", "str"),
        ("n", "i16"),
        ("state_id", "i64"),
        ("tiles", "str"),
        ("roll", "i16"),
        ("move", _TILES),
        ("instead_of", _TILES),
        ("dice", "i16"),
        ("instead_of_dice", "i16"),
        ("exception", "str"),
        ("reach", "f64"),
        ("gain", "f64"),
        ("value", "f64"),
        ("gap", "f64"),
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


#: Tables a game writes from frames of its own (`Game.extra_tables`), whose columns the game
#: gives rather than :data:`COLUMNS`.
GAME_TABLES = ("summary", "benchmarks")
#: Every table a data directory can hold.
ALL_TABLES = (*COLUMNS, *GAME_TABLES)


#: Columns a file may leave null because they follow from the row's other columns: the policy
#: of a box built without a graph (13 tiles or more: up to hundreds of millions of rows) leaves out
#: the best move's next state (the state's tiles less the move's: state_id XOR best_move_mask)
#: whether the roll is stuck (no best move) and the row's kind (`end` when stuck, else `move`), a
#: quarter less to encode and to store. Every reader fills them in from these DuckDB expressions
#: (the views': :func:`tile_select`) or their polars twins (:func:`derived_polars`); a row
#: that has the column keeps it.
DERIVED: dict[str, dict[str, str]] = {
    "policy": {
        "next_state_id": "coalesce(next_state_id, xor(state_id, best_move_mask))",
        "stuck": "coalesce(stuck, best_move_mask is null)",
        # a box is one player's: a roll without a move ends the game
        "kind": "coalesce(kind, case when best_move_mask is null then 'end' else 'move' end)",
    },
}


#: Where a file that leaves its tile columns to the reader keeps what they say: each list or
#: text column of tiles, and the id or mask column it is read from. Such a file (a box of 13
#: tiles or more, built without a graph) writes every column but these as null; its state ids
#: are bitmasks of open tiles (bit t - 1 for tile t) and its ``*_mask`` columns bitmasks of the
#: tiles a move shuts. ``None`` stands for the policy's next state, itself filled in
#: (:data:`DERIVED`). See :func:`tile_select` and :func:`tile_polars`.
TILE_SOURCES: dict[str, dict[str, str | None]] = {
    "states": {"tiles": "state_id", "open_tiles": "state_id"},
    "policy": {"tiles": "state_id", "best_move": "best_move_mask", "next_tiles": None},
    "moves": {"tiles": "state_id", "move": "move_mask", "next_tiles": "next_state_id"},
    "edges": {"tiles": "state_id", "move": "move_mask", "next_tiles": "next_state_id"},
}
#: Text columns among :data:`TILE_SOURCES` (the others are lists of tiles).
TILE_TEXT = frozenset({"tiles", "next_tiles"})
#: The kind of an edge of a box built without a graph (one player: a roll without a move ends
#: the game), which such a file leaves null.
EDGE_KIND = "coalesce(kind, case when move_mask is null then 'end' else 'move' end)"


def tile_separator(n_tiles: int) -> str:
    """How ``tiles`` text joins the tiles of a box of ``n_tiles``: digits up to 9, commas above."""
    return "," if n_tiles > 9 else ""


def tile_select(table: str, columns: list[str], n_tiles: int) -> dict[str, str]:
    """DuckDB expressions (column -> SQL) that fill in the columns a file of ``table`` with
    ``columns`` leaves to the reader when its ids are bitmasks of ``n_tiles`` tiles: the tile
    lists and texts (:data:`TILE_SOURCES`), the policy's :data:`DERIVED` columns and an edge's
    kind. A row that has a value keeps it."""
    present = set(columns)
    out = {c: sql for c, sql in DERIVED.get(table, {}).items() if c in present}
    for column, source in _tile_sources(table, present):
        ids = out.get("next_state_id", "next_state_id") if source is None else source
        tiles = f"[t for t in range(1, {n_tiles + 1}) if (({ids}) >> (t - 1)) & 1 = 1]::tinyint[]"
        if column in TILE_TEXT:
            tiles = f"array_to_string({tiles}, '{tile_separator(n_tiles)}')"
        out[column] = f"coalesce({column}, case when ({ids}) is null then null else {tiles} end)"
    if table == "edges" and {"kind", "move_mask"} <= present:
        out["kind"] = EDGE_KIND
    return out


def tile_polars(table: str, columns: list[str], n_tiles: int) -> list[pl.Expr]:
    """The polars twins of :func:`tile_select`: the same columns, the same values."""
    import polars as pl

    present = set(columns)
    out = [e for e in derived_polars(table, columns) if e.meta.output_name() in present]
    filled = {e.meta.output_name(): e for e in out}
    for column, source in _tile_sources(table, present):
        if source is None:  # the policy's next state, itself filled in
            ids = filled.get("next_state_id", pl.col("next_state_id"))
        else:
            ids = pl.col(source)
        tiles = ids.map_batches(
            lambda masks: tile_lists(masks, n_tiles), return_dtype=pl.List(pl.Int8)
        )
        if column in TILE_TEXT:
            tiles = tiles.cast(pl.List(pl.String)).list.join(tile_separator(n_tiles))
        out.append(pl.coalesce(column, tiles).alias(column))
    if table == "edges" and {"kind", "move_mask"} <= present:
        end = pl.when(pl.col("move_mask").is_null()).then(pl.lit("end")).otherwise(pl.lit("move"))
        out.append(pl.coalesce("kind", end).alias("kind"))
    return out


#: Rows decoded at a time by :func:`tile_lists` (its bit matrix: 64 bytes a row).
DECODE_ROWS = 1 << 18


def tile_lists(masks: pl.Series, n_tiles: int) -> pl.Series:
    """Bitmasks of tiles (bit t - 1 for tile t) as lists of tiles, increasing (null stays
    null), a slice of :data:`DECODE_ROWS` rows at a time."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    valid = masks.is_not_null().to_numpy()
    ids = np.ascontiguousarray(masks.fill_null(0).cast(pl.Int64).to_numpy(), dtype="<i8")
    parts = []
    for start in range(0, len(ids), DECODE_ROWS):
        part = ids[start : start + DECODE_ROWS]
        bits = np.unpackbits(part.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        bits = bits[:, :n_tiles]
        offsets = np.zeros(len(part) + 1, dtype=np.int32)
        np.cumsum(bits.sum(axis=1), out=offsets[1:])
        values = (np.nonzero(bits)[1] + 1).astype(np.int8)
        mask = pa.array(~valid[start : start + DECODE_ROWS])
        parts.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values), mask=mask))
    lists = pa.chunked_array(parts, type=pa.list_(pa.int8()))
    return pl.Series(masks.name, lists, dtype=pl.List(pl.Int8))


def _tile_sources(table: str, present: set[str]) -> list[tuple[str, str | None]]:
    """(column, the column it is read from) of :data:`TILE_SOURCES` that a file with the
    ``present`` columns can fill in (``None``: the policy's next state)."""
    return [
        (column, source)
        for column, source in TILE_SOURCES.get(table, {}).items()
        if column in present and (source or "next_state_id") in present
    ]


#: Each column type code's type in DuckDB, and the names of its polars and pyarrow types.
_TYPES = {
    "str": ("varchar", "String", "string"),
    "i8": ("tinyint", "Int8", "int8"),
    "i16": ("smallint", "Int16", "int16"),
    "i32": ("integer", "Int32", "int32"),
    "i64": ("bigint", "Int64", "int64"),
    "f64": ("double", "Float64", "float64"),
    "bool": ("boolean", "Boolean", "bool_"),
}


def _typed(code: str, engine: int, module: Any, listed: Callable[[Any], Any]) -> Any:
    """A column type code as an engine's type: its name in :data:`_TYPES` (``engine``: its
    place there) made by ``module`` (None: the name itself), or ``listed`` of it (``list[i8]``)."""
    inner = code[5:-1] if code.startswith("list[") else code
    name = _TYPES[inner][engine]
    kind = name if module is None else getattr(module, name)()
    return kind if inner == code else listed(kind)


def sql_type(table: str, column: str) -> str:
    """DuckDB's name of the type of ``table``'s ``column`` in the one schema (``tinyint[]``)."""
    return str(_typed(dict(COLUMNS[table])[column], 0, None, lambda t: t + "[]"))


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

    return _typed(code, 1, pl, pl.List)


def polars_type(table: str, column: str) -> pl.DataType:
    """The polars type of ``table``'s ``column`` in the one schema."""
    return _dtype(dict(COLUMNS[table])[column])


def empty_frame(table: str) -> pl.DataFrame | None:
    """An empty frame with ``table``'s columns (None for a table without a fixed schema)."""
    import polars as pl

    if table not in COLUMNS:
        return None
    return pl.DataFrame(schema={name: _dtype(code) for name, code in COLUMNS[table]})


def arrow_fields(table: str) -> list[tuple[str, object]]:
    """``table``'s columns as (name, pyarrow type), for writers that stream Arrow batches."""
    import pyarrow as pa

    return [(name, _typed(code, 2, pa, pa.list_)) for name, code in COLUMNS[table]]
