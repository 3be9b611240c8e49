"""A variant's own ``states`` file sorted by state id, read a row group at a time with pyarrow.

The full Knucklebones game's tables (``build --device cuda``) are lean: one row per position,
4.8 billion of them per objective, in 4,590 row groups of 1,048,576 ids whose ``state_id``
statistics say their range. An answer needs the position and its successors: a handful of ids,
so a handful of row groups. The file's footer (5 MB: every row group's statistics) is parsed
once, when the file is opened, and each row group then costs its own read (about 10 ms): DuckDB,
which the index reads every other table with, parses the footer again for each query, a tenth
of a second here. And a GPU machine has pyarrow but no DuckDB (issue 31): `knucklebones solve`
answers there too.

Opened files are kept (a few: the two objectives of a board, and their footers) until the file
on disk changes; their rules (``stb.rules``) say which board and objective they hold.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import TableError
from pipeline.store.layout import rebuild_hint
from pipeline.store.schema import RULES_KEY

#: Files kept open (footers parsed) at once.
MAX_OPEN = 16


class SortedFile:
    """One table file's footer, parsed once: its rules, columns and each row group's rows and
    state id range; and its row groups, read one at a time."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.file = pq.ParquetFile(self.path)
            meta = self.file.metadata
            schema = self.file.schema_arrow
        except (pa.ArrowException, OSError) as exc:
            first = (str(exc).splitlines() or ["unreadable"])[0]
            raise TableError(
                f"{self.path} is not a readable table ({first}); {rebuild_hint(self.path)}"
            ) from None
        kv = schema.metadata or {}
        self.rules: dict[str, Any] = json.loads(kv.get(RULES_KEY, b"{}"))
        """The rules recorded for each variant the file holds."""
        self.columns = set(schema.names)
        groups = meta.num_row_groups
        self.rows = np.array([meta.row_group(g).num_rows for g in range(groups)], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.rows)[:-1]]).astype(np.int64)
        self.lows = np.full(groups, -1, dtype=np.int64)
        self.highs = np.full(groups, -1, dtype=np.int64)
        self.has_ranges = "state_id" in self.columns
        if self.has_ranges:
            at = schema.names.index("state_id")
            for g in range(groups):
                stats = meta.row_group(g).column(at).statistics
                if stats is None or not stats.has_min_max:
                    self.has_ranges = False
                    break
                self.lows[g], self.highs[g] = int(stats.min), int(stats.max)

    @property
    def sorted_by_id(self) -> bool:
        """Whether the row groups hold increasing, disjoint ranges of state ids (so one id is
        in one known row group)."""
        if not self.has_ranges or self.rows.size == 0:
            return False
        return bool(np.all(self.lows[1:] > self.highs[:-1]) and np.all(self.lows <= self.highs))

    def first(self, columns: list[str]) -> dict[str, Any]:
        """The first row's ``columns`` (the lean file's constants: its objective, direction)."""
        with self._lock:
            table = self.file.read_row_group(0, columns=columns)
        return {c: table.column(c)[0].as_py() for c in columns}

    def read_values(self, group: int) -> np.ndarray:
        """Row group ``group``'s values (float64) where its rows fill its id range, one per
        id in order (the lean tables' groups: sorted by id, each id once, as the GPU build
        writes them and `knucklebones check-tables` samples): the ids are not read, half the
        bytes of a group."""
        with self._lock:
            table = self.file.read_row_group(group, columns=["value"])
        value = table.column("value")
        if value.null_count or len(value) != self.highs[group] - self.lows[group] + 1:
            raise TableError(
                f"{self.path}: row group {group} lacks values; {rebuild_hint(self.path)}"
            )
        return _numpy(value).astype(np.float64, copy=False)

    def read(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """Row group ``group``'s state ids and values (float64); TableError where a value is
        missing or an id lies outside the group's statistics."""
        with self._lock:  # one read at a time per file: pyarrow's file handle is shared
            table = self.file.read_row_group(group, columns=["state_id", "value"])
        value = table.column("value")
        if value.null_count:
            raise TableError(f"{self.path}: states without a value; {rebuild_hint(self.path)}")
        ids = _numpy(table.column("state_id"))
        if ids.size and (ids.min() < self.lows[group] or ids.max() > self.highs[group]):
            raise TableError(
                f"{self.path}: state ids beyond its statistics; {rebuild_hint(self.path)}"
            )
        return ids.astype(np.int64, copy=False), _numpy(value).astype(np.float64, copy=False)


#: numpy's type of each arrow type of a state id or value.
_DTYPES = {"double": np.float64, "float": np.float32, "int64": np.int64, "int32": np.int32}


def _numpy(column: Any) -> np.ndarray:
    """A column read (chunks without nulls) as one numpy array over arrow's buffers: pyarrow's
    own ``to_numpy`` imports pandas, a quarter of a second of a cold answer."""
    chunks = []
    for chunk in column.chunks:
        dtype = np.dtype(_DTYPES[str(chunk.type)])
        data = chunk.buffers()[1]
        chunks.append(np.frombuffer(data, dtype, len(chunk), chunk.offset * dtype.itemsize))
    if not chunks:
        return np.empty(0)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


_open: OrderedDict[tuple[str, int, int, int], SortedFile] = OrderedDict()
_open_lock = threading.Lock()


def open_file(path: Path) -> SortedFile:
    """``path`` opened (its footer parsed), or the copy already open while the file on disk is
    the same (inode, time, size)."""
    path = Path(path)
    st = path.stat()
    key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size)
    with _open_lock:
        found = _open.get(key)
        if found is not None:
            _open.move_to_end(key)
            return found
    opened = SortedFile(path)
    with _open_lock:
        for old in [k for k in _open if k[0] == key[0]]:  # an older version of the file
            del _open[old]
        _open[key] = opened
        while len(_open) > MAX_OPEN:
            _open.popitem(last=False)
    return opened


_rules: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def file_rules(path: Path) -> dict[str, Any]:
    """The rules a table file records, by variant: its footer, read once per file version and
    kept apart from the open files (a data directory has more table files than are kept open,
    and every board answer asks them all)."""
    path = Path(path)
    st = path.stat()
    signature = (st.st_ino, st.st_mtime_ns, st.st_size)
    found = _rules.get(str(path))
    if found is not None and found[0] == signature:
        return found[1]
    rules = open_file(path).rules
    with _open_lock:
        _rules[str(path)] = (signature, rules)
    return rules
