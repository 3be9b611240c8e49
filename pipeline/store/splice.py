"""One Parquet file from row groups encoded side by side on several threads.

Pyarrow's ParquetWriter encodes a file's row groups one after another, on one thread: the
writing of a big table (hundreds of millions of rows) then takes longer than its solve, while
the other cores wait. Here each row group is encoded by a worker thread as a Parquet file of its
own, in memory (:func:`encode_part`: ``PAR1``, its column chunks, its footer). The file's
assembler appends each part's column chunks to the file in row-group order, whichever thread
finished first, and at the end writes one footer: the first part's (schema, key-value metadata,
writer), with every part's row groups in order, their byte offsets moved to where their chunks
landed and their ordinals renumbered (:func:`footer`).

A column chunk is encoded from its row group alone, so the file is, byte for byte, the one a
single ParquetWriter writes when given the same row groups (a test holds it). Readers see one
ordinary file: nothing about a table's layout, its manifest entry or its readers changes.

Parquet's page indexes and bloom filters (written between the last row group and the footer)
are not carried over: a part that has them is refused. The tables write neither.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.store import thrift

MAGIC = b"PAR1"

# Field ids of parquet.thrift (parquet-format) that the splice reads or moves.
FILE_NUM_ROWS, FILE_ROW_GROUPS = 3, 4
GROUP_COLUMNS, GROUP_TOTAL_BYTES, GROUP_FILE_OFFSET = 1, 2, 5
GROUP_COMPRESSED, GROUP_ORDINAL = 6, 7
CHUNK_FILE_OFFSET, CHUNK_META = 2, 3
CHUNK_OFFSET_INDEX, CHUNK_COLUMN_INDEX = 4, 6
META_COMPRESSED = 7
META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE, META_BLOOM_FILTER = 9, 10, 11, 14
#: Row group ordinals are Thrift i16.
MAX_ORDINAL = (1 << 15) - 1


@dataclass(frozen=True)
class Part:
    """One encoded part: its column chunks' bytes (the part file between ``PAR1`` and its page
    indexes or footer) and its footer, read."""

    chunks: memoryview
    """The part file's bytes from offset 4 to its footer (a view of them, not a copy)."""
    meta: thrift.Struct
    """The part's ``FileMetaData``."""
    rows: int


def encode_part(table: Any, schema: Any, options: Mapping[str, Any], metadata: Any) -> Part:
    """``table`` (pyarrow) encoded as a Parquet file of one row group in memory (``schema``,
    ParquetWriter ``options``, key-value ``metadata`` added as the table writers add it); with
    ``table`` None, the file of no row group (an empty table's, as a writer given no rows
    leaves it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    # a deep copy: pyarrow adds use_byte_stream_split's columns to the caller's column_encoding
    writer = pq.ParquetWriter(sink, schema, store_schema=False, **copy.deepcopy(dict(options)))
    if metadata:
        writer.add_key_value_metadata(metadata)
    if table is not None:
        writer.write_table(table, row_group_size=max(table.num_rows, 1))
    writer.close()
    return read_part(sink.getvalue())


def read_part(data: Any) -> Part:
    """A Parquet file in memory (``data``: bytes or a pyarrow buffer) as a :class:`Part`;
    ValueError when it is not a plain Parquet file or has page indexes or bloom filters."""
    view = memoryview(data)
    n = len(view)
    if n < 12 or bytes(view[:4]) != MAGIC or bytes(view[n - 4 :]) != MAGIC:
        raise ValueError("not a Parquet file")
    size = int.from_bytes(view[n - 8 : n - 4], "little")
    start = n - 8 - size
    meta = thrift.loads(bytes(view[start : n - 8]))
    groups = meta.get(FILE_ROW_GROUPS)
    for group in groups[1] if groups else []:
        for chunk in group.get(GROUP_COLUMNS)[1]:
            column = chunk.get(CHUNK_META)
            if (
                chunk.get(CHUNK_OFFSET_INDEX) is not None
                or chunk.get(CHUNK_COLUMN_INDEX) is not None
                or (column is not None and column.get(META_BLOOM_FILTER) is not None)
            ):
                raise ValueError("page indexes and bloom filters cannot be spliced")
    return Part(view[4:start], meta, int(meta.get(FILE_NUM_ROWS)))


def shifted(groups: Sequence[thrift.Struct], by: int, first: int) -> list[thrift.Struct]:
    """``groups`` (row groups of one part, read) with every byte offset moved ``by`` bytes and
    ordinals from ``first`` on. The structs are changed in place and returned."""
    for i, group in enumerate(groups):
        _move(group, GROUP_FILE_OFFSET, by)
        if group.get(GROUP_ORDINAL) is not None:
            if first + i > MAX_ORDINAL:
                raise ValueError(f"more than {MAX_ORDINAL + 1} row groups in one file")
            group.set(GROUP_ORDINAL, first + i)
        for chunk in group.get(GROUP_COLUMNS)[1]:
            _move(chunk, CHUNK_FILE_OFFSET, by)
            column = chunk.get(CHUNK_META)
            if column is not None:
                for fid in (META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE):
                    _move(column, fid, by)
    return list(groups)


def merged(parts: Sequence[tuple[Part, Sequence[str]]], columns: Sequence[str], meta: Part) -> Part:
    """One row group of ``columns`` (in this order) from parts of one row group each holding
    some of them, the same rows: each given with the names of its columns, in its order.
    ``meta`` is a part of the whole schema (no rows: :func:`encode_part` of None) whose footer
    the result takes.

    A column chunk is encoded from its own column alone, so the result is, byte for byte, the
    part :func:`encode_part` makes of the whole row group (a test holds it): the chunks are
    laid one after another in ``columns``' order, their offsets moved, and the row group's
    sizes summed. The writer encodes a table's constant and null columns (a third of a big
    box's policy columns) once per row group size, and the others for each row group."""
    found: dict[str, tuple[thrift.Struct, memoryview]] = {}
    totals = [0, 0]
    rows = {part.rows for part, _ in parts}
    if len(rows) != 1:
        raise ValueError(f"parts of different rows: {sorted(rows)}")
    for part, names in parts:
        (group,) = part.meta.get(FILE_ROW_GROUPS)[1]
        chunks = group.get(GROUP_COLUMNS)[1]
        if len(chunks) != len(names):
            raise ValueError(f"a part of {len(chunks)} columns given {len(names)} names")
        for name, chunk in zip(names, chunks, strict=True):
            column = chunk.get(CHUNK_META)
            start = column.get(META_DICTIONARY_PAGE) or column.get(META_DATA_PAGE)
            size = column.get(META_COMPRESSED)
            found[name] = chunk, part.chunks[start - 4 : start - 4 + size]
        totals[0] += group.get(GROUP_TOTAL_BYTES)
        totals[1] += group.get(GROUP_COMPRESSED)
    position = len(MAGIC)
    out: list[thrift.Struct] = []
    for name in columns:
        chunk, data = found[name]
        chunk = copy.deepcopy(chunk)
        column = chunk.get(CHUNK_META)
        by = position - (column.get(META_DICTIONARY_PAGE) or column.get(META_DATA_PAGE))
        _move(chunk, CHUNK_FILE_OFFSET, by)
        for fid in (META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE):
            _move(column, fid, by)
        out.append(chunk)
        position += len(data)
    group = copy.deepcopy(parts[0][0].meta.get(FILE_ROW_GROUPS)[1][0])
    group.set(GROUP_COLUMNS, (thrift.STRUCT, out))
    group.set(GROUP_TOTAL_BYTES, totals[0])
    group.set(GROUP_FILE_OFFSET, len(MAGIC))
    group.set(GROUP_COMPRESSED, totals[1])
    whole = copy.deepcopy(meta.meta)
    whole.set(FILE_NUM_ROWS, rows.pop())
    whole.set(FILE_ROW_GROUPS, (thrift.STRUCT, [group]))
    joined = b"".join(found[name][1] for name in columns)
    return Part(memoryview(joined), whole, int(whole.get(FILE_NUM_ROWS)))


def footer(first: thrift.Struct, groups: list[thrift.Struct], rows: int) -> bytes:
    """The file's footer: ``first`` (a part's metadata: schema, key-value metadata, writer)
    holding ``groups`` and ``rows``, with its length and the closing magic."""
    meta = copy.deepcopy(first)
    meta.set(FILE_NUM_ROWS, rows)
    meta.set(FILE_ROW_GROUPS, (thrift.STRUCT, groups))
    body = thrift.dumps(meta)
    return body + len(body).to_bytes(4, "little") + MAGIC


def _move(s: thrift.Struct, fid: int, by: int) -> None:
    """Move the offset in field ``fid`` by ``by`` bytes. Offset 0 (where the magic stands) is
    no place in the file but "not given": pyarrow writes the deprecated ``file_offset`` of a
    column chunk so, and a single writer leaves it 0 too."""
    value = s.get(fid)
    if value:
        s.set(fid, value + by)
