"""A table file's footer, read once: the rules it records, its columns and every row group's
rows and state id range (one row-group index, :class:`Layout`), for every reader of a data
directory; and its row groups read one at a time.

Two engines parse footers. DuckDB's (:class:`Reader`: a lookup loads no pyarrow, and the
shared files' rules and row groups come from it) and pyarrow's (:class:`SortedFile`): a
variant's own file sorted by state id, as the full Knucklebones game's lean tables are (one row
per position, 4.8 billion per objective, in 4,590 row groups of 1,048,576 ids), is parsed once
(5 MB of statistics) and each row group read on its own (about 10 ms); DuckDB would parse the
footer again for every query, a tenth of a second here, and a GPU machine has pyarrow but no
DuckDB (issue 31): `knucklebones solve` answers there too. :func:`file_rules` picks between
them, and keeps what it read while the file is the same (:func:`signature`).

Opened files are kept (a few: the two objectives of a board, and their footers) until the file
on disk changes; their rules (``stb.rules``) say which board and objective they hold.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from pipeline.errors import TableError
from pipeline.store.engine import engine
from pipeline.store.layout import OWN_DIR, rebuild_hint
from pipeline.store.schema import RULES_KEY

#: Rows one read holds at most (row groups are joined up to it): the peak while reading.
CHUNK_ROWS = 1 << 20


def signature(path: Path | str) -> tuple[int, int, int]:
    """What says a file is the one read before: its inode, time and size (OSError when gone).
    Every reader of a data directory compares it (a commit renames new files in)."""
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Reader:
    """Reads Parquet files into numpy with one in-memory DuckDB (a cursor per read: safe from
    several threads)."""

    def __init__(self) -> None:
        self._con: Any = None
        self._lock = threading.Lock()

    @property
    def con(self) -> Any:
        """The in-memory DuckDB, opened on first use (an index whose answers read only the
        files :meth:`Index.sorted_states` reads with pyarrow needs no DuckDB: a GPU machine
        has none)."""
        if self._con is None:
            with self._lock:
                if self._con is None:
                    self._con = engine().connect()
        return self._con

    def query(self, path: Path, sql: str, **params: Any) -> dict[str, np.ndarray]:
        """The columns of ``sql`` (which reads ``read_parquet($path)``) as numpy arrays (masked
        where null)."""
        return dict(self._run(path, sql, params, lambda cur: cur.fetchnumpy()))

    def rows(self, path: Path, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` as tuples."""
        return list(self._run(path, sql, params, lambda cur: cur.fetchall()))

    def _run(
        self, path: Path, sql: str, params: dict[str, Any], fetch: Callable[[Any], Any]
    ) -> Any:
        """``fetch`` of ``sql`` run with bound parameters; TableError naming the file when
        DuckDB cannot read it."""
        try:
            with self.con.cursor() as cur:
                return fetch(cur.execute(sql, {"path": str(path), **params}))
        except engine().Error as exc:
            first = (str(exc).splitlines() or ["unreadable"])[0]
            raise TableError(
                f"{path} is not a readable table ({first}); {rebuild_hint(path)}"
            ) from None

    def file_rules(self, path: Path) -> dict[str, Any]:
        """The rules a table file records (its ``stb.rules`` metadata), by variant."""
        found = self.rows(
            path,
            "select decode(value) from parquet_kv_metadata($path) where decode(key) = 'stb.rules'",
        )
        return json.loads(found[0][0]) if found else {}

    def layout(self, path: Path, name: str) -> Layout:
        """Where ``name``'s rows lie in ``path``: its row groups (from the file's statistics,
        no row read) and the file's columns."""
        found = self.rows(
            path,
            "select row_group_id, any_value(row_group_num_rows), "
            "any_value(stats_min_value) filter (where path_in_schema = 'variant'), "
            "any_value(stats_max_value) filter (where path_in_schema = 'variant'), "
            "any_value(stats_min_value) filter (where path_in_schema = 'state_id'), "
            "any_value(stats_max_value) filter (where path_in_schema = 'state_id') "
            "from parquet_metadata($path) group by row_group_id order by row_group_id",
        )
        columns = {r[0] for r in self.rows(path, "select name from parquet_schema($path)")}
        groups, start, alone = [], 0, True
        for _, n, vlo, vhi, lo, hi in found:
            # a row group holds one variant (a file without the column: the lean tables)
            if vlo is None or vlo <= name <= (vhi or vlo):
                groups.append(Group(start, int(n), _int(lo), _int(hi)))
            alone = alone and (vlo is None or vlo == vhi == name)
            start += int(n)
        return Layout(groups, columns, alone)


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


class Group(NamedTuple):
    """One row group of a variant: its first row in the file, its rows and state id range."""

    start: int
    rows: int
    lo: int | None
    hi: int | None


@dataclass(frozen=True)
class Layout:
    """A variant's row groups in one file and the file's columns."""

    groups: list[Group]
    columns: set[str]
    alone: bool
    """The file holds this variant only."""

    @property
    def rows(self) -> int:
        return sum(g.rows for g in self.groups)

    @property
    def sorted_by_id(self) -> bool:
        """Whether the row groups hold increasing, disjoint ranges of state ids (then one id is
        in one known row group)."""
        last = -1
        for g in self.groups:
            if g.lo is None or g.hi is None or g.lo <= last:
                return False
            last = g.hi
        return bool(self.groups)

    @property
    def max_id(self) -> int:
        return max((g.hi for g in self.groups if g.hi is not None), default=-1)

    def chunks(self, most: int = CHUNK_ROWS) -> list[tuple[int, int]]:
        """The variant's rows as (first, last) file row numbers, consecutive row groups joined
        up to ``most`` rows: what one read holds."""
        out: list[tuple[int, int]] = []
        for g in self.groups:
            if out and out[-1][1] + 1 == g.start and g.start + g.rows - out[-1][0] <= most:
                out[-1] = (out[-1][0], g.start + g.rows - 1)
            else:
                out.append((g.start, g.start + g.rows - 1))
        return out


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

        ranged = zip(self.starts.tolist(), self.rows.tolist(), self.lows.tolist(),
                     self.highs.tolist(), strict=True)  # fmt: skip
        self.layout = Layout(
            [Group(a, n, lo if self.has_ranges else None, hi if self.has_ranges else None)
             for a, n, lo, hi in ranged],
            self.columns,
            True,
        )  # fmt: skip
        """The row-group index, as DuckDB's reader gives it (:meth:`Reader.layout`)."""

    @property
    def sorted_by_id(self) -> bool:
        """Whether the row groups hold increasing, disjoint ranges of state ids (so one id is
        in one known row group)."""
        return self.layout.sorted_by_id

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
_duckdb: list[Reader | None] = []


def file_rules(path: Path) -> dict[str, Any]:
    """The rules a table file records (its ``stb.rules`` metadata), by variant: read once per
    file version. A variant's own file is opened with pyarrow (its parsed footer then serves
    its row-group reads); a shared file with DuckDB where it can be imported (pyarrow stays
    unloaded: 60 MB of a server's memory), else pyarrow too. TableError for a damaged file."""
    path = Path(path)
    key, now = str(path), signature(path)
    found = _rules.get(key)
    if found is not None and found[0] == now:
        return found[1]
    reader = _shared_reader() if path.parent.parent.name != OWN_DIR else None
    rules = reader.file_rules(path) if reader is not None else open_file(path).rules
    with _open_lock:
        _rules[key] = (now, rules)
    return rules


def _shared_reader() -> Reader | None:
    """DuckDB's reader of footers, None where DuckDB cannot be imported (a GPU machine)."""
    if not _duckdb:
        try:
            engine()
        except ImportError:
            _duckdb.append(None)
        else:
            _duckdb.append(Reader())
    return _duckdb[0]
