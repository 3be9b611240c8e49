"""A table file's footer, read once, for every reader of a data directory and every writer
that merges into one: the rules it records, its columns, its key-value metadata and every row
group's rows and state id range (one row-group index, :class:`Layout`); and a big file's row
groups read one at a time.

:func:`footer` is the one reader of footers (:class:`Footer`), kept while the file is the same
(:func:`signature`): DuckDB parses a footer up to :data:`DUCKDB_FOOTER_BYTES` (a process that
only reads tables then never loads pyarrow), pyarrow a larger one (the full Knucklebones game's
lean tables, 4,590 row groups and 5 MB of statistics, in about a tenth of a second, twenty
times quicker than DuckDB's ``parquet_metadata``) and every footer on a GPU machine, which has
pyarrow but no DuckDB. The rules a file records (``stb.rules``) are decoded by
:func:`decode_rules` alone. :class:`SortedFile` reads a variant's own file sorted by state id
(the lean tables: one row per position, row groups of 1,048,576 ids) a row group at a time
(about 10 ms each) over its parsed footer; :class:`Reader` reads rows with DuckDB's engine
(what a lookup of a shared file's variant needs).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from pipeline._version import __version__
from pipeline.errors import TableError
from pipeline.store.engine import available, engine
from pipeline.store.listing import rebuild_hint, unreadable
from pipeline.store.schema import COLUMNS_KEY, RULES_KEY, VERSION_KEY

#: Rows one read holds at most (row groups are joined up to it): the peak while reading.
CHUNK_ROWS = 1 << 20
#: Footers kept parsed at once (least recently used dropped).
MAX_FOOTERS = 64
#: The largest footer DuckDB parses (:class:`Footer`); a larger one is pyarrow's.
DUCKDB_FOOTER_BYTES = 1 << 20


def signature(path: Path | str) -> tuple[int, int, int]:
    """What says a file is the one read before: its inode, time and size (OSError when gone).
    Every reader of a data directory compares it (a commit renames new files in)."""
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def maybe_signature(path: Path | str) -> tuple[int, int, int] | None:
    """:func:`signature`, None where the file is gone."""
    try:
        return signature(path)
    except OSError:
        return None


def decode_rules(metadata: Mapping[bytes, bytes] | None, path: Path | str) -> dict[str, Any]:
    """The rules a table file records (its ``stb.rules`` metadata: JSON, one rule set by
    variant); none where it records none. TableError naming the file where they are not a JSON
    object of objects: the one decoder of recorded rules."""
    raw = (metadata or {}).get(RULES_KEY)
    if raw is None:
        return {}
    try:
        found = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        found = None
    if not isinstance(found, dict) or not all(isinstance(r, dict) for r in found.values()):
        raise TableError(
            f"{path} records rules that are not JSON rule sets by variant; "
            f"{rebuild_hint(Path(path))}"
        )
    return found


def recorded(rules: Mapping[str, Any]) -> dict[bytes, bytes]:
    """The key-value metadata every table file holding the variants of ``rules`` (name -> rule
    set) records: ``stb.rules``, what :func:`decode_rules` reads back, and the package's
    version."""
    found = json.dumps(dict(sorted(rules.items())), sort_keys=True).encode()
    return {RULES_KEY: found, VERSION_KEY: __version__.encode()}


class Stats(NamedTuple):
    """A column chunk's statistics (None where the file has none)."""

    min: Any
    max: Any
    nulls: int | None


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

    def head(self, path: Path, sql: str, **params: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The column names of ``sql``'s result and its rows."""
        return self._run(  # type: ignore[no-any-return]
            path, sql, params, lambda cur: ([d[0] for d in cur.description], cur.fetchall())
        )

    def _run(
        self, path: Path, sql: str, params: dict[str, Any], fetch: Callable[[Any], Any]
    ) -> Any:
        """``fetch`` of ``sql`` run with bound parameters; TableError naming the file when
        DuckDB cannot read it."""
        try:
            with self.con.cursor() as cur:
                return fetch(cur.execute(sql, {"path": str(path), **params}))
        except engine().Error as exc:
            raise unreadable(path, exc) from None


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


class Footer:
    """One table file's footer, parsed once (:func:`footer`): its columns, key-value metadata,
    recorded rules, and each row group's rows and statistics.

    A footer of up to :data:`DUCKDB_FOOTER_BYTES` is parsed by DuckDB where it is installed, so
    that a process that only reads tables (`serve`, the answers) never loads pyarrow: 25 to
    32 MB of a server's memory. A larger one (the full game's lean tables: thousands of row groups,
    where DuckDB's ``parquet_metadata`` takes twenty times pyarrow's tenth of a second), and
    any on a machine without DuckDB, by pyarrow. Both give the same fields (a test holds it on
    every file of a build); :attr:`meta` and :attr:`schema`, pyarrow's own objects for its
    readers and writers, are parsed when first asked."""

    def __init__(self, path: Path, stamp: tuple[int, int, int]) -> None:
        self.path = Path(path)
        self.signature = stamp
        """The file's :func:`signature` when it was read."""
        self._meta: Any = None
        self._index: dict[str, list[Stats | None]] = {}
        if _footer_bytes(self.path) <= DUCKDB_FOOTER_BYTES and available():
            self.columns, self.metadata, group_rows, self._index = _duckdb_footer(self.path)
        else:
            meta = self.meta
            schema = meta.schema.to_arrow_schema()
            self.columns, self.metadata = tuple(schema.names), dict(schema.metadata or {})
            group_rows = [int(meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
        self._group_rows: list[int] = group_rows
        self.rows = sum(group_rows)
        self.groups = len(group_rows)
        self._rules: dict[str, Any] | None = None

    @property
    def meta(self) -> Any:
        """pyarrow's ``FileMetaData`` of the file (parsed on first use)."""
        if self._meta is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                self._meta = pq.read_metadata(self.path)
            except (pa.ArrowException, OSError) as exc:
                raise unreadable(self.path, exc, 160) from None
        return self._meta

    @property
    def schema(self) -> Any:
        """pyarrow's schema of the file, with its metadata."""
        return self.meta.schema.to_arrow_schema()

    @property
    def rules(self) -> dict[str, Any]:
        """The rules the file records, by variant (:func:`decode_rules`)."""
        if self._rules is None:
            self._rules = decode_rules(self.metadata, self.path)
        return self._rules

    @property
    def declared(self) -> list[str] | None:
        """The columns a lean file says it holds (``stb.columns``), None for a file with
        every column of its table."""
        raw = self.metadata.get(COLUMNS_KEY)
        return None if raw is None else list(json.loads(raw))

    def group_rows(self, group: int) -> int:
        return self._group_rows[group]

    def empty_in_first_group(self, column: str) -> bool:
        """Whether the first rows of the first row group hold nothing (nulls) in ``column``:
        what a file without statistics says of a column written empty or full."""
        import pyarrow.parquet as pq

        batches = pq.ParquetFile(self.path, metadata=self.meta).iter_batches(
            batch_size=1024, row_groups=[0], columns=[column]
        )
        first = next(batches)
        return bool(first.column(0).null_count == first.num_rows)

    def stats(self, column: str) -> list[Stats | None]:
        """Every row group's statistics of ``column`` (None for a group without them; none at
        all where the file lacks the column)."""
        found = self._index.get(column)
        if found is None:
            found = []
            if column in self.columns:
                at = self.columns.index(column)
                for g in range(self.groups):
                    st = self.meta.row_group(g).column(at).statistics
                    if st is None:
                        found.append(None)
                        continue
                    lo, hi = (st.min, st.max) if st.has_min_max else (None, None)
                    found.append(Stats(lo, hi, st.null_count if st.has_null_count else None))
            self._index[column] = found
        return found

    def layout(self, name: str | None = None) -> Layout:
        """Where ``name``'s rows lie in the file: its row groups (a row group holds one variant;
        a file without the ``variant`` column holds one) and the file's columns; without
        ``name``, every row group (a state id range None where a group has no statistics)."""
        ids = self.stats("state_id") or [None] * self.groups
        names = self.stats("variant") or [None] * self.groups
        groups, start, alone = [], 0, True
        for g in range(self.groups):
            n = self.group_rows(g)
            vlo, vhi = _span(names[g])
            if name is None or vlo is None or vlo <= name <= (vhi or vlo):
                lo, hi = _span(ids[g])
                groups.append(Group(start, n, _int(lo), _int(hi)))
            alone = alone and (vlo is None or vlo == vhi == name)
            start += n
        return Layout(groups, set(self.columns), alone)


def _footer_bytes(path: Path) -> int:
    """The length of a Parquet file's footer (its last 8 bytes: the length, then ``PAR1``);
    TableError for a file that does not end as Parquet does."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < 12:
                raise ValueError("shorter than a Parquet file")
            f.seek(-8, os.SEEK_END)
            tail = f.read(8)
    except (OSError, ValueError) as exc:
        raise unreadable(path, exc, 160) from None
    if tail[4:] != b"PAR1":
        raise unreadable(path, ValueError("no Parquet magic bytes at its end"))
    return int.from_bytes(tail[:4], "little")


#: A statistic's text (DuckDB's ``parquet_metadata``) as pyarrow gives it, by physical type.
_STAT_TYPES: dict[str, Callable[[str], Any]] = {
    "INT32": int, "INT64": int, "FLOAT": float, "DOUBLE": float,
    "BOOLEAN": lambda text: text == "true",
}  # fmt: skip


def _duckdb_footer(
    path: Path,
) -> tuple[tuple[str, ...], dict[bytes, bytes], list[int], dict[str, list[Stats | None]]]:
    """The file's top-level columns, key-value metadata (pyarrow's: without its own
    ``ARROW:schema``), each row group's rows and every column's statistics, parsed by DuckDB
    (:class:`Footer`)."""
    try:
        with _footer_con().cursor() as cur:
            tree = cur.execute(
                "select name, num_children from parquet_schema($p)", {"p": str(path)}
            ).fetchall()
            pairs = cur.execute(
                "select key, value from parquet_kv_metadata($p)", {"p": str(path)}
            ).fetchall()
            (groups,) = cur.execute(
                "select num_row_groups from parquet_file_metadata($p)", {"p": str(path)}
            ).fetchone()
            chunks = cur.execute(
                "select row_group_id, row_group_num_rows, path_in_schema, type, "
                "stats_min_value, stats_max_value, stats_null_count "
                "from parquet_metadata($p) order by row_group_id, column_id",
                {"p": str(path)},
            ).fetchall()
    except engine().Error as exc:
        raise unreadable(path, exc, 160) from None
    columns: list[str] = []
    at = 1  # the root's children, each with its descendants skipped
    while at < len(tree):
        columns.append(tree[at][0])
        left = 1
        while left:  # the column and every node below it
            left += (tree[at][1] or 0) - 1
            at += 1
    group_rows = [0] * int(groups)
    stats: dict[str, list[Stats | None]] = {c: [None] * int(groups) for c in columns}
    seen: set[tuple[int, str]] = set()
    for group, rows, where, kind, lo, hi, nulls in chunks:
        group_rows[group] = int(rows)
        column = where.split(",")[0].strip()  # a nested column: its first leaf, as pyarrow's
        if (group, column) in seen or column not in stats:
            continue
        seen.add((group, column))
        if lo is None and hi is None and nulls is None:
            continue  # no statistics
        cast = _STAT_TYPES.get(kind, str)
        stats[column][group] = Stats(
            None if lo is None else cast(lo), None if hi is None else cast(hi), nulls
        )
    metadata = {bytes(k): bytes(v) for k, v in pairs if bytes(k) != b"ARROW:schema"}
    return tuple(columns), metadata, group_rows, stats


@lru_cache(maxsize=1)
def _footer_con() -> Any:
    """The in-memory DuckDB that parses footers (a cursor per footer: safe from threads)."""
    return engine().connect()


def _span(stats: Stats | None) -> tuple[Any, Any]:
    return (None, None) if stats is None else (stats.min, stats.max)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


_T = TypeVar("_T")


class _Kept(Generic[_T]):
    """What was made from each file (its footer parsed, the file opened), kept while the file
    on disk is the same (inode, time, size: one stat to check), the least recently used
    dropped past ``most`` files."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: OrderedDict[str, tuple[tuple[int, int, int], _T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path | str, make: Callable[[tuple[int, int, int]], _T]) -> _T:
        """What ``make(signature)`` made of the file at ``path``, made again when it changed."""
        key = str(path)
        now = signature(key)
        with self._lock:
            found = self._kept.get(key)
            if found is not None and found[0] == now:
                self._kept.move_to_end(key)
                return found[1]
        made = make(now)
        with self._lock:
            self._kept[key] = (now, made)  # in place of an older version of the file
            self._kept.move_to_end(key)
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)
        return made


_footers: _Kept[Footer] = _Kept(MAX_FOOTERS)


def footer(path: Path | str) -> Footer:
    """``path``'s footer, parsed once per version of the file (inode, time, size: one stat to
    check); TableError for a file that is not readable Parquet, OSError when it is gone."""
    return _footers.get(path, lambda now: Footer(Path(path), now))


def file_rules(path: Path | str) -> dict[str, Any]:
    """The rules a table file records (``stb.rules``), by variant; TableError for a damaged
    file."""
    return footer(path).rules


#: Files kept open (their row groups read by pyarrow) at once.
MAX_OPEN = 16


class SortedFile:
    """One table file's row groups, read one at a time over its parsed :class:`Footer`: its
    rules, columns and each row group's rows and state id range as arrays."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(path)
        self._lock = threading.Lock()
        self.footer = footer(self.path)
        try:
            self.file = pq.ParquetFile(self.path, metadata=self.footer.meta)
        except (pa.ArrowException, OSError) as exc:
            raise unreadable(self.path, exc) from None
        self.rules: dict[str, Any] = self.footer.rules
        """The rules recorded for each variant the file holds."""
        self.columns = set(self.footer.columns)
        ids = self.footer.stats("state_id")
        self.has_ranges = bool(ids) and all(s is not None and s.min is not None for s in ids)
        whole = self.footer.layout()
        if not self.has_ranges:  # some group without statistics: none of them is ranged
            unranged = [Group(g.start, g.rows, None, None) for g in whole.groups]
            whole = Layout(unranged, whole.columns, True)
        self.layout = whole
        """The row-group index (what :meth:`Footer.layout` gives)."""
        groups = self.layout.groups
        self.rows = np.array([g.rows for g in groups], dtype=np.int64)
        self.lows = np.array([-1 if g.lo is None else g.lo for g in groups], dtype=np.int64)
        self.highs = np.array([-1 if g.hi is None else g.hi for g in groups], dtype=np.int64)

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


_open: _Kept[SortedFile] = _Kept(MAX_OPEN)


def open_file(path: Path) -> SortedFile:
    """``path`` opened (its footer parsed), or the copy already open while the file on disk is
    the same (inode, time, size)."""
    return _open.get(Path(path), lambda _: SortedFile(Path(path)))
