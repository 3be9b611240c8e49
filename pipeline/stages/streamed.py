"""Building a variant without its graph: the game's streamed solve written straight to Parquet.

For boxes too big to hold as a graph (custom rule sets of 13 tiles and more), the game solves
layer by layer and hands over batches of rows (:meth:`pipeline.games.base.Game.stream`); they are
encoded as they come into the variant's own files (``variants/<name>/<table>.parquet``), staged
under temporary names and committed with the journal like any other build. Memory holds the
value of every state and a batch, never a table.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from pipeline.games.base import Game, Streamed
from pipeline.games.registry import Variant
from pipeline.store import files, layout, manifest, schema, stream_writer, tables
from pipeline.store.footers import recorded
from pipeline.store.tables import StagedTable


def write_streamed(
    variant: Variant, game: Game, streamed: Streamed, data_dir: Path
) -> tuple[dict[str, StagedTable], dict[str, Any]]:
    """Write ``streamed``'s tables as staged files of ``variant``; the staged tables by key and
    a summary (states, nodes, moves, start_value, seconds)."""
    t0 = time.perf_counter()
    finals = {
        t: layout.table_path(data_dir, layout.own_key(variant.name, t)) for t in streamed.tables
    }
    made: list[Path] = []  # folders this build creates, deepest first
    for final in finals.values():
        folder = final.parent
        while not folder.exists():
            made.append(folder)
            folder = folder.parent
        final.parent.mkdir(parents=True, exist_ok=True)
    staged = {t: files._tmp_name(final) for t, final in finals.items()}
    # the rule set in the files' metadata, as every table writer records it (readers and the
    # `rules` view find a variant's rules there)
    meta = recorded({variant.name: game.rules()})
    schemas = {t: written_schema(t, streamed.columns.get(t), meta) for t in streamed.tables}
    constants = {
        t: {
            **dict.fromkeys(schemas[t].names),  # a column no batch fills is null
            **streamed.constants.get(t, {}),
            "variant": variant.name,
        }
        for t in streamed.tables
    }
    digests: dict[str, str] = {}
    try:
        rows = stream_writer.write_streamed_many(
            staged, streamed.batches, schemas, constants, streamed.options, digests
        )
    except BaseException:
        for path in staged.values():
            path.unlink(missing_ok=True)
        for folder in made:  # a first build that failed leaves no empty folder either
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    nodes, moves = streamed.counts()
    summary = {
        "states": streamed.n_states,
        "nodes": nodes,
        "moves": moves,
        "start_value": streamed.start_value(),
        "seconds": time.perf_counter() - t0,
    }
    out = {
        layout.own_key(variant.name, t): StagedTable(
            path, rows[t], {variant.name: rows[t]}, digests.get(t)
        )
        for t, path in staged.items()
    }
    return out, summary


def written_schema(table: str, columns: tuple[str, ...] | None, meta: dict[bytes, bytes]) -> Any:
    """The Arrow schema ``table`` is written with: every column, nullable, or only ``columns``,
    required (see :attr:`pipeline.games.base.Streamed.columns`)."""
    import pyarrow as pa

    fields = schema.arrow_fields(table)
    if columns is None:
        return pa.schema(fields, metadata=meta)
    kept = [pa.field(name, kind, nullable=False) for name, kind in fields if name in columns]
    # the file says which columns it holds, so that `verify` tells a lean file from a damaged one
    said = json.dumps([f.name for f in kept]).encode()
    return pa.schema(kept, metadata={**meta, tables.COLUMNS_KEY: said})


def variant_record(
    game: Game, stages: list[str], rows: dict[str, int], summary: dict[str, Any]
) -> dict[str, Any]:
    """The manifest record of a streamed build."""
    kept = {k: summary[k] for k in ("states", "nodes", "moves", "start_value")}
    return manifest.variant_record(game.rules(), stages, {}, rows, kept, {"streamed": True})
