"""The solved values of every built variant in memory, by state id: what every answer reads.

As python-chess's Syzygy reader opens each table file once and answers a probe with an index
computation and a read, a variant's ``states`` rows are read once, on its first answer, into
numpy arrays indexed by state id: the value, the number of dice optimal play rolls, how many it
may choose from, whether play is over, and the columns the game's answers report (the N-player
shares). A move's value is then its successor's value (``offset + scale * value[next]``), and a
turn passed to the next player the mover's payoff there, so no ``policy`` or ``moves`` row is
read to answer: the rules list the moves.

DuckDB's compiled engine reads the files (only the columns needed, only the variant's row
groups); no SQL runs per answer of a process that answers again (a one-shot lookup, `expect` or
`move`, reads the rows it needs by state id instead: :class:`PointStates`). What is held stays
within ``cache_mb`` (least recently used variants dropped first). A variant too big for it is
read a row group at a time, when its file is sorted by state id with statistics (the full
Knucklebones game's lean tables: row groups of 1,048,576 ids), each row group kept in the same
budget; one that is not, and does not fit, is refused with the memory it needs. A table file
that changes on disk is read again: what is held is kept while the data directory's current look
(:mod:`pipeline.store.directory`: the one freshness rule, taken off the request path) gives its
file the version it was read at, so an answer compares nothing on disk. A process that answers
once (:class:`PointStates`) reads once and compares nothing.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import TableError, UsageError
from pipeline.store import directory, footers
from pipeline.store.directory import Directory, Version
from pipeline.store.footers import Group, Layout, Reader, SortedFile, footer, open_file
from pipeline.store.layout import OWN_DIR, rebuild_hint, settle, variant_file
from pipeline.store.listing import no_rows, not_built

#: Memory for the arrays of every variant held at once (MB), unless told otherwise.
DEFAULT_CACHE_MB = 256
#: Ids up to this many times the rows (plus a little) are held densely (index = state id).
DENSE_FACTOR = 2
#: The columns of a state every answer reads (besides the game's own), and their bytes a row.
BASE_COLUMNS = {"value": 8, "dice": 1, "choice_options": 1, "terminal": 1}


@dataclass(frozen=True, slots=True)
class StateRow:
    """One state's columns."""

    value: float
    dice: int
    """The number of dice optimal play rolls (0: none, play is over)."""
    choice_options: int
    terminal: bool
    columns: dict[str, float | None]


class States:
    """A variant's states by state id (read whole: :class:`HeldStates`; a row group at a time:
    :class:`PagedStates`)."""

    name: str
    objective: str
    maximise: bool

    def values(self, ids: np.ndarray) -> np.ndarray:
        """The value of each state id (NaN where the variant has no such state)."""
        raise NotImplementedError

    def row(self, state_id: int) -> StateRow | None:
        """One state's columns (None: no such state)."""
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        raise NotImplementedError


class HeldStates(States):
    """States of a variant in arrays: by state id (dense ids: ``ids`` None, row = id - ``low``)
    or by position among the sorted ``ids`` (sparse ones: the stake game's digital scores make
    its ids sparse). ``value`` is NaN where no state has the id."""

    def __init__(
        self,
        name: str,
        ids: np.ndarray | None,
        value: np.ndarray,
        cols: dict[str, np.ndarray],
        objective: str,
        maximise: bool,
        low: int = 0,
    ) -> None:
        self.name, self.objective, self.maximise = name, objective, maximise
        self.ids, self.value, self.cols, self.low = ids, value, cols, low
        self.size = value.shape[0]

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Each state id's row (-1 where the variant has no such state)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.ids is None:
            rows = ids - self.low
            ok = (rows >= 0) & (rows < self.size)
            pos = np.where(ok, rows, 0)
            return np.where(ok & ~np.isnan(self.value[pos]), pos, -1)
        if self.size == 0:
            return np.full(ids.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self.ids, ids).clip(0, self.size - 1)
        return np.where(self.ids[pos] == ids, pos, -1)

    def values(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size:  # moves lead to states held: one index, after a check that they are
            if self.ids is None:
                if not self.low:  # ids are never negative: take() refuses one past the end
                    with contextlib.suppress(IndexError):
                        return self.value.take(ids)
                rows = ids - self.low
                if rows.min() >= 0 and rows.max() < self.size:
                    return self.value[rows]
            else:
                rows = np.searchsorted(self.ids, ids)
                if rows.max() < self.size and (self.ids[rows] == ids).all():
                    return self.value[rows]
        pos = self.positions(ids)
        return np.where(pos >= 0, self.value[pos.clip(0)], np.nan)

    def row(self, state_id: int) -> StateRow | None:
        if self.ids is None:
            k = state_id - self.low
            if not 0 <= k < self.size or self.value[k] != self.value[k]:
                return None
        else:
            k = int(np.searchsorted(self.ids, state_id))
            if k >= self.size or int(self.ids[k]) != state_id:
                return None
        return _state_row(float(self.value[k]), {c: col[k] for c, col in self.cols.items()})

    def all_ids(self) -> np.ndarray:
        """Every state id held, increasing."""
        if self.ids is None:
            return np.flatnonzero(~np.isnan(self.value)) + self.low
        return self.ids

    @property
    def nbytes(self) -> int:
        held = self.value.nbytes + sum(c.nbytes for c in self.cols.values())
        return held + (0 if self.ids is None else self.ids.nbytes)


class PagedStates(States):
    """A variant too big to hold, whose file is sorted by state id: each row group is read when
    an answer needs one of its states, and kept (least recently used dropped) in the index's
    budget."""

    def __init__(
        self,
        name: str,
        layout: Layout,
        load: Callable[[Group], HeldStates],
        objective: str,
        maximise: bool,
    ) -> None:
        self.name, self.objective, self.maximise = name, objective, maximise
        self.groups = layout.groups
        self.lows = np.array([g.lo for g in layout.groups], dtype=np.int64)
        self.highs = np.array([g.hi for g in layout.groups], dtype=np.int64)
        self.load = load

    def _group(self, state_id: int) -> Group | None:
        k = int(np.searchsorted(self.lows, state_id, side="right")) - 1
        return self.groups[k] if k >= 0 and state_id <= self.highs[k] else None

    def values(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(ids.shape[0], np.nan)
        k = np.searchsorted(self.lows, ids, side="right") - 1
        inside = (k >= 0) & (ids <= self.highs[k.clip(0)])
        for g in np.unique(k[inside]).tolist():  # one load per row group (a sample: thousands)
            at = inside & (k == g)
            out[at] = self.load(self.groups[g]).values(ids[at])
        return out

    def row(self, state_id: int) -> StateRow | None:
        group = self._group(state_id)
        return None if group is None else self.load(group).row(state_id)

    @property
    def nbytes(self) -> int:
        return self.lows.nbytes + self.highs.nbytes


class PointStates(States):
    """A variant's states read by state id, a few rows a query (DuckDB skips the row groups
    the file's statistics rule out): what one answer of a one-shot command needs, a state and
    the states its moves lead to, without reading the whole variant into arrays (a process
    that answers once: `expect`, `move`). The rows read are kept."""

    def __init__(
        self,
        name: str,
        path: Path,
        reader: Reader,
        wanted: list[str],
        by_variant: bool,
        objective: str,
        maximise: bool,
    ) -> None:
        self.name, self.objective, self.maximise = name, objective, maximise
        self.path, self.reader, self.wanted = path, reader, wanted
        self.where = "variant = $name and " if by_variant else ""
        self.known: dict[int, tuple[Any, ...] | None] = {}

    def _fetch(self, ids: list[int]) -> None:
        """Read the rows of the ids not read yet (one query)."""
        todo = [i for i in dict.fromkeys(ids) if i not in self.known]
        if not todo:
            return
        select = ", ".join(f'"{c}"' for c in ["state_id", *self.wanted])
        one = len(todo) == 1
        which = "state_id = $id" if one else "state_id in (select unnest($ids))"
        params: dict[str, Any] = {"id": todo[0]} if one else {"ids": todo}
        if self.where:
            params["name"] = self.name
        sql = f"select {select} from read_parquet($path) where {self.where}{which}"
        for found in self.reader.rows(self.path, sql, **params):
            self.known[int(found[0])] = found[1:]
        for i in todo:
            self.known.setdefault(i, None)

    def _value(self, found: tuple[Any, ...] | None) -> float:
        if found is None:
            return math.nan
        value = found[self.wanted.index("value")]
        if value is None:
            raise _unsolved(self.name)
        return float(value)

    def values(self, ids: np.ndarray) -> np.ndarray:
        wanted = np.asarray(ids, dtype=np.int64).tolist()
        self._fetch(wanted)
        return np.array([self._value(self.known[i]) for i in wanted], dtype=np.float64)

    def row(self, state_id: int) -> StateRow | None:
        self._fetch([state_id])
        found = self.known[state_id]
        if found is None:
            return None
        return _state_row(self._value(found), dict(zip(self.wanted, found, strict=True)))

    @property
    def nbytes(self) -> int:
        return 0


@dataclass
class _Held:
    """One entry of the index's memory: what it holds, from which file version."""

    value: Any
    nbytes: int
    where: str
    """The file it was read from (a path as a string: the look's key)."""
    version: Version | None
    """The file's version when it was read (:meth:`Directory.version`; None in a process that
    answers once, which compares nothing)."""


class Index:
    """The variants of one data directory in memory (thread-safe: the server answers from
    several threads)."""

    def __init__(
        self, data_dir: Path, cache_mb: float = DEFAULT_CACHE_MB, points: bool = False
    ) -> None:
        self.budget = int(cache_mb * 1024 * 1024)
        self.points = points
        """Read a state's rows by id as answers ask for them (:class:`PointStates`) rather
        than a variant whole: for a process that answers once (it reads once, and compares no
        file's version)."""
        self.directory: Directory | None = None if points else directory.of(data_dir)
        self.data_dir = Path(data_dir) if self.directory is None else self.directory.data_dir
        self.reader = Reader()
        self._held: OrderedDict[tuple[str, ...], _Held] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self.reads = 0
        """Files read so far (a test counts them)."""

    # -- what is held ---------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        with self._lock:
            return sum(h.nbytes for h in self._held.values())

    def held(self) -> list[str]:
        """The variants held (whole or in part), least recently used first."""
        with self._lock:
            return list(dict.fromkeys(key[0] for key in self._held))

    def in_memory(self, name: str) -> bool:
        """Whether ``name``'s states are held whole (an answer then reads no file, unless the
        file changed)."""
        with self._lock:
            found = self._held.get((name, "states"))
            return found is not None and isinstance(found.value, HeldStates)

    def _put(self, key: tuple[str, ...], held: _Held) -> None:
        """Keep ``held``, dropping the least recently used entries past the budget (never the
        new one: a variant bigger than the budget is refused before it is read)."""
        with self._lock:
            self._held[key] = held
            self._held.move_to_end(key)
            total = sum(h.nbytes for h in self._held.values())
            while total > self.budget and len(self._held) > 1:
                old_key, old = next(iter(self._held.items()))
                if old_key == key:
                    break
                del self._held[old_key]
                total -= old.nbytes

    def _drop(self, name: str) -> None:
        with self._lock:
            for key in [k for k in self._held if k[0] == name]:
                del self._held[key]

    def _room(self, need: int) -> None:
        """Drop least recently used entries until ``need`` more bytes fit (so the peak while
        reading stays within the budget too)."""
        with self._lock:
            total = sum(h.nbytes for h in self._held.values())
            while self._held and total + need > self.budget:
                total -= self._held.popitem(last=False)[1].nbytes

    # -- files and their versions ----------------------------------------------------------------

    def path(self, table: str, name: str) -> Path:
        """The file holding ``name``'s rows of ``table`` (its own, or the shared one)."""
        return variant_file(self.data_dir, table, name)

    def _version(self, where: str) -> Version | None:
        """The version of the file at ``where`` to record as read: the current look's, looked
        again where the file on disk is not the one it saw (a read is rare: a stat)."""
        if self.directory is None:
            return None
        found = self.directory.version(where)
        if found is None or found[0] != footers.maybe_signature(where):
            found = self.directory.refresh().version(where)
        return found

    def _fresh(self, key: tuple[str, ...]) -> _Held | None:
        """The entry under ``key`` if its file is the one read (the current look gives it the
        version it was read at), else None (the variant's entries dropped): nothing on disk is
        looked at (a process that answers once keeps what it read)."""
        with self._lock:
            found = self._held.get(key)
            if found is None:
                return None
            self._held.move_to_end(key)
        # (a variant moved to files of its own rewrites the shared file too)
        if self.directory is not None and self.directory.version(found.where) != found.version:
            self._drop(key[0])
            return None
        return found

    def _load(self, key: tuple[str, ...], table: str, read: Callable[[Path], tuple[Any, int]]):
        """The entry under ``key``, read by ``read(path) -> (value, bytes)`` when it is not
        held (one thread reads; the others wait for it)."""
        found = self._fresh(key)
        if found is not None:
            return found.value
        with self._lock:
            loading = self._loading.setdefault(key[0], threading.Lock())
        with loading:
            found = self._fresh(key)
            if found is not None:
                return found.value
            settle(self.data_dir)  # a commit in progress or interrupted: finish it first
            path = self.path(table, key[0])
            if not path.exists():
                raise not_built(path, key[0])
            where = str(path)
            version = self._version(where)
            value, nbytes = read(path)
            self.reads += 1
            self._put(key, _Held(value, nbytes, where, version))
            return value

    # -- states ---------------------------------------------------------------------------------

    def states(self, name: str, columns: Sequence[str] = ()) -> States:
        """``name``'s states (read on first use), with the game's ``columns`` beside the base
        ones; TablesMissingError when it is not built, UsageError when it is too big for the
        budget and cannot be read in parts."""
        found = self._fresh((name, "states"))  # what nearly every answer finds
        if found is not None:
            return found.value  # type: ignore[no-any-return]
        read = self._point if self.points else self._read
        return self._load((name, "states"), "states", lambda p: read(p, name, columns))

    def _point(self, path: Path, name: str, columns: Sequence[str]) -> tuple[States, int]:
        """``name``'s states read by id as answers ask (:class:`PointStates`): the file's
        columns and the variant's objective now, from its first row (one query: no footer is
        parsed beside DuckDB's own reading), no state yet."""
        shared = path.parent.parent.name != OWN_DIR  # many variants: its rows by name
        have, first = self.reader.head(
            path,
            "select * from read_parquet($path) "
            + ("where variant = $name " if shared else "")
            + "limit 1",
            **({"name": name} if shared else {}),
        )
        if "value" not in have or "state_id" not in have:
            raise TableError(f"{path} lacks the state_id and value columns; {rebuild_hint(path)}")
        if not first:
            raise no_rows(path, name)
        row = dict(zip(have, first[0], strict=True))
        if row.get("objective") is None:
            raise TableError(f"{path}: {name} has no objective; {rebuild_hint(path, name)}")
        wanted = [c for c in (*BASE_COLUMNS, *columns) if c in have]
        found = PointStates(
            name, path, self.reader, wanted, shared, str(row["objective"]),
            bool(row.get("maximise", True)),
        )  # fmt: skip
        return found, 0

    def _read(self, path: Path, name: str, columns: Sequence[str]) -> tuple[States, int]:
        layout = footer(path).layout(name)
        if not layout.groups or layout.rows == 0:
            raise no_rows(path, name)
        wanted = [c for c in (*BASE_COLUMNS, *columns) if c in layout.columns]
        if "value" not in wanted or "state_id" not in layout.columns:
            raise TableError(f"{path} lacks the state_id and value columns; {rebuild_hint(path)}")
        objective, maximise = self._objective(path, name, layout)
        need = _bytes(layout.groups, wanted)
        if need > self.budget:
            part = max(_bytes([g], wanted) for g in layout.groups)
            if not layout.sorted_by_id or part > self.budget:
                how = (
                    "a row group at a time"
                    if layout.sorted_by_id
                    else "whole (its states file is not sorted by state id)"
                )
                mb = -(-(part if layout.sorted_by_id else need) // (1024 * 1024))
                raise UsageError(
                    f"{name} needs {mb} MB in memory to answer, read {how}: more than the "
                    f"{self.budget / (1024 * 1024):g} MB allowed (raise --cache-mb to {mb})"
                )

            def block(group: Group) -> HeldStates:
                key = (name, "block", str(group.start))
                return self._load(
                    key, "states", lambda p: self._read_held(p, name, wanted, [group], layout)
                )

            return PagedStates(name, layout, block, objective, maximise), 0
        self._room(need)
        return self._read_held(path, name, wanted, layout.groups, layout, objective, maximise)

    def sorted_states(self, name: str) -> States:
        """``name``'s values for answers that look up a few state ids (a Knucklebones board and
        its successors). A variant's own file sorted by state id (the full game's lean tables)
        is read a row group at a time with pyarrow (:mod:`pipeline.store.footers`), its footer
        parsed once: DuckDB parses it again for every read, a tenth of a second with the full
        game's 4,590 row groups, and a GPU machine has no DuckDB. Each row group read is kept
        in the budget like any entry. Anything else is read as :meth:`states` reads it."""
        return self._load((name, "states"), "states", lambda p: self._read_sorted(p, name))

    def _read_sorted(self, path: Path, name: str) -> tuple[States, int]:
        if path.parent.name != name or path.parent.parent.name != OWN_DIR:
            return self._read(path, name, ())  # the shared file: small variants, held whole
        found = open_file(path)
        if not found.layout.sorted_by_id or set(found.rules) - {name}:
            return self._read(path, name, ())
        first = found.first(["objective", "maximise"]) if "objective" in found.columns else {}
        if first.get("objective") is None:
            raise TableError(f"{path}: {name} has no objective; {rebuild_hint(path, name)}")
        objective, maximise = str(first["objective"]), bool(first.get("maximise", True))
        number = {g.start: k for k, g in enumerate(found.layout.groups)}

        def block(group: Group) -> HeldStates:
            key = (name, "block", str(group.start))
            k = number[group.start]
            return self._load(
                key, "states", lambda _: _group_states(found, k, name, objective, maximise)
            )

        return PagedStates(name, found.layout, block, objective, maximise), 0

    def _objective(self, path: Path, name: str, layout: Layout) -> tuple[str, bool]:
        """The variant's objective and direction (its first row)."""
        first = self.reader.rows(
            path,
            "select objective, maximise from read_parquet($path, file_row_number = true) "
            "where file_row_number = $row",
            row=layout.groups[0].start,
        )
        if not first or first[0][0] is None:
            raise TableError(f"{path}: {name} has no objective; {rebuild_hint(path, name)}")
        return str(first[0][0]), bool(first[0][1])

    def _read_held(
        self,
        path: Path,
        name: str,
        wanted: list[str],
        groups: list[Group],
        layout: Layout,
        objective: str = "",
        maximise: bool = True,
    ) -> tuple[HeldStates, int]:
        """The states of ``groups`` held in arrays, read a few row groups at a time (by file
        row number: no variant column is read, and DuckDB's result never holds the whole
        variant, so the peak stays near the arrays' own size) and placed by state id."""
        if not objective:
            objective, maximise = self._objective(path, name, layout)
        dense = _dense(groups)
        low, top = _span(groups)
        size = top - low + 1 if dense else sum(g.rows for g in groups)
        value = np.full(size, np.nan)
        cols = {c: _empty(c, size) for c in wanted if c != "value"}
        ids = None if dense else np.empty(size, dtype=np.int64)
        select = ", ".join(f'"{c}"' for c in ["state_id", *wanted])
        at = 0
        for first, last in Layout(groups, layout.columns, layout.alone).chunks():
            found = self.reader.query(
                path,
                f"select {select} from read_parquet($path, file_row_number = true) "
                "where file_row_number between $first and $last",
                first=first,
                last=last,
            )
            if np.ma.is_masked(found["value"]):
                raise _unsolved(name)
            got = np.asarray(found["state_id"], dtype=np.int64)
            if got.size and (got.min() < low or got.max() > top):
                raise TableError(f"{path}: state ids beyond its statistics; {rebuild_hint(path)}")
            if dense:
                where: Any = got - low
            else:
                where = slice(at, at + got.size)
                ids[where] = got  # type: ignore[index]
                at += got.size
            value[where] = np.asarray(found["value"], dtype=np.float64)
            for c, arr in cols.items():
                arr[where] = _filled(c, found[c])
            del found, got
        if ids is not None:  # sparse ids: sorted, for a binary search
            order = np.argsort(ids, kind="stable")
            ids, value = ids[order], value[order]
            cols = {c: arr[order] for c, arr in cols.items()}
        held = HeldStates(name, ids, value, cols, objective, maximise, low if dense else 0)
        return held, held.nbytes


def _state_row(value: float, got: dict[str, Any]) -> StateRow:
    """A state's row from its value and columns (a missing base column: 0, False)."""
    extra = {
        key: None if v is None or v != v else float(v)  # NaN and null: null in the table
        for key, v in got.items()
        if key not in BASE_COLUMNS
    }
    return StateRow(
        value,
        int(got.get("dice") or 0),
        int(got.get("choice_options") or 0),
        bool(got.get("terminal") or False),
        extra,
    )


def _group_states(
    found: SortedFile, k: int, name: str, objective: str, maximise: bool
) -> tuple[HeldStates, int]:
    """Row group ``k`` of a sorted file held by state id (densely where its ids fill their
    range, as the lean tables' do)."""
    low, top = int(found.lows[k]), int(found.highs[k])
    if int(found.rows[k]) == top - low + 1:  # its ids fill their range (the lean tables' groups)
        value = found.read_values(k)
        return HeldStates(name, None, value, {}, objective, maximise, low), value.nbytes
    ids, value = found.read(k)
    if _dense([Group(0, ids.size, low, top)]):
        held = np.full(top - low + 1, np.nan)
        held[ids - low] = value
        out = HeldStates(name, None, held, {}, objective, maximise, low)
    else:
        order = np.argsort(ids, kind="stable")
        out = HeldStates(name, ids[order], value[order], {}, objective, maximise)
    return out, out.nbytes


def _span(groups: Sequence[Group]) -> tuple[int, int]:
    """The lowest and highest state id of some row groups (from their statistics)."""
    low = min((g.lo for g in groups if g.lo is not None), default=0)
    top = max((g.hi for g in groups if g.hi is not None), default=-1)
    return low, top


def _dense(groups: Sequence[Group]) -> bool:
    """Whether the ids are held densely (row = id - lowest id): they nearly fill their span."""
    low, top = _span(groups)
    return top - low < DENSE_FACTOR * sum(g.rows for g in groups) + 1024


def _bytes(groups: Sequence[Group], wanted: Sequence[str]) -> int:
    """Bytes :meth:`Index._read_held` holds for ``groups``."""
    per_row = sum(BASE_COLUMNS.get(c, 8) for c in wanted)
    if _dense(groups):
        low, top = _span(groups)
        return (top - low + 1) * per_row
    return sum(g.rows for g in groups) * (per_row + 8)


def _empty(column: str, size: int) -> np.ndarray:
    """A column's array before it is filled: null dice are 0, a missing float NaN."""
    if column == "terminal":
        return np.zeros(size, dtype=bool)
    if column in BASE_COLUMNS:
        return np.zeros(size, dtype=np.int8)
    return np.full(size, np.nan)


def _filled(column: str, found: np.ndarray) -> np.ndarray:
    """A column as read (masked where null) with its nulls filled as :func:`_empty` does."""
    if column == "terminal":
        return np.ma.filled(found, False).astype(bool)
    if column in BASE_COLUMNS:
        return np.ma.filled(found, 0).astype(np.int8)
    return np.ma.filled(np.ma.asarray(found, dtype=np.float64), np.nan)


def _unsolved(name: str) -> UsageError:
    return UsageError(
        f"variant {name} is enumerated but not solved: run `stb-pipeline build --variant {name}`"
    )
