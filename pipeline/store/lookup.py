"""The values of a states file, kept beside it for the one-shot `expect` (``states.lookup``).

A process that answers once pays for its imports more than for its answer: numpy, DuckDB's
engine and the command line's typer are about 0.4 s of CPU, the lookup itself a millisecond. A
commit that writes a states file (``states.parquet``, or a variant's own
``variants/<name>/states.parquet``) therefore also writes, beside it, every variant's
``value`` column by state id in a plain binary file that the standard library reads
(:func:`value`): `stb-pipeline expect` answers from it without loading numpy, DuckDB, pyarrow,
polars, typer or rich (:mod:`pipeline.cli.lean`).

A lookup is trusted only when every check holds, and otherwise not used at all (the caller
answers from the Parquet file as before, whose errors are the command's):

- its header is intact (its sha256 follows it) and of this format;
- the states file beside it is the very file it was made from. Its signature (inode,
  modification time and size: :func:`pipeline.store.footers.signature`, the data directory's
  one freshness rule) and its inode's change time, which no writer can set back, are the ones
  recorded when the lookup was made, and that change time is older than the lookup itself
  (a file rewritten in the same tick of the clock as its lookup could not be told apart). A
  file with another signature (a copied data directory, a ``touch``) is the very file only if
  its sha256 is the one recorded; that hash is taken only for files up to
  :data:`MAX_HASH_BYTES`, so a bigger one answers from Parquet;
- it was made for the file's place (the shared file is read by variant, a variant's own file
  whole), and the variant's bytes that the answer reads are intact: each section is cut into
  blocks of :data:`BLOCK` bytes, the sha256 of each block is in a table at the section's head,
  and the sha256 of that table is in the header, so that an answer reads and hashes one block
  (two dozen for a sparse section's binary search), not the section;
- the state has a finite value there (no row, a null value, or a value that is not a number:
  the Parquet answer says what it says).

The file: ``MAGIC``, the header's length (4 bytes, little-endian), the header (JSON) and its
sha256 (32 bytes), then one section per variant (its offset counted from there): the table of
its blocks' sha256 (32 bytes a block), then its values, dense (``count`` values from state id
``low``, float64 little-endian, NaN where there is no answer) or sparse (``count`` state ids,
int64, sorted, then their ``count`` values). It is written atomically (a temporary file
renamed over the old one) as a commit ends, before its journal goes
(:func:`pipeline.store.layout.recover`); a file that cannot be made (an unreadable table, a
disk full, values over :data:`MAX_BODY_BYTES`) is removed instead, which costs only speed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

MAGIC = b"STB-LOOKUP\n\x02"
FORMAT = 2
#: The name of a lookup, beside its states file.
NAME = "states.lookup"
#: A states file whose signature is not the recorded one is hashed whole to be trusted, up to
#: this size (about 1.4 GB/s here: 32 MB is about 25 ms); a bigger one answers from Parquet.
MAX_HASH_BYTES = 32 << 20
#: The most bytes of values a lookup keeps (128 million states, dense): the full game's 4.8
#: billion states would need 38 GB beside its tables, and it is built on a GPU only.
MAX_BODY_BYTES = 1 << 30
#: The bytes a block's sha256 covers: what one answer reads and hashes (about 50 µs).
BLOCK = 64 << 10
#: Rows read at a time when a lookup is written.
BATCH_ROWS = 1 << 20
#: Ids up to this many times the rows (plus a little) are kept densely (as pipeline.store.states).
DENSE_FACTOR = 2
OWN_DIR = "variants"  # pipeline.store.listing.OWN_DIR (not imported: this module loads alone)


def lookup_path(states_file: Path | str) -> str:
    """Where the lookup of ``states_file`` lives."""
    return os.path.join(os.path.dirname(states_file), NAME)


# -- reading (the standard library only) --------------------------------------------------------


def value(data_dir: str, name: str, state_id: int) -> float | None:
    """The value of state ``state_id`` of variant ``name`` as `expect` would read it from
    ``data_dir`` (resolved, as :func:`pipeline.answer.answers.one_shot` resolves it), or None
    where the lookup cannot vouch for it (missing, stale, damaged, a commit pending, no finite
    value): then the answer is the Parquet file's. Never raises for a bad file (OSError and
    ValueError mean None)."""
    try:
        return _value(data_dir, name, state_id)
    except (OSError, ValueError, KeyError, TypeError, struct.error, OverflowError):
        return None


def _value(data_dir: str, name: str, state_id: int) -> float | None:
    if _unsettled(data_dir):
        return None  # the full path finishes a commit or sweeps first
    own = os.path.join(data_dir, OWN_DIR, name, "states.parquet")
    if os.path.exists(own):
        source, shared = own, False
    else:
        source = os.path.join(data_dir, "states.parquet")
        # (the answer reads a file below a folder named "variants" whole: not this one's way)
        if os.path.basename(os.path.dirname(data_dir)) == OWN_DIR:
            return None
        shared = True
    with _open_regular(lookup_path(source)) as fh:
        head = _header(fh)
        if head is None or head.get("shared") is not shared:
            return None
        if head.get("source") != os.path.basename(source):
            return None
        if not _same_file(source, head, os.fstat(fh.fileno()).st_mtime_ns):
            return None
        section = head["variants"].get(name)
        if section is None:
            return None
        found = _find(_Section(fh, head["body"], section), section, state_id)
    return found if found is not None and math.isfinite(found) else None


def _open_regular(path: str) -> Any:
    """``path`` opened for reading in binary; OSError unless it is a regular file (a FIFO
    would block the read, a device never end it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _unsettled(data_dir: str) -> bool:
    """Whether a commit is pending (its journal) or temporary files lie about (a build running,
    or one killed): the full path then waits, finishes or sweeps before it reads."""
    folders = [data_dir]
    with os.scandir(data_dir) as entries:
        for entry in entries:
            if entry.name == ".stb-commit.json" or _temporary(entry.name):
                return True
            if entry.name == OWN_DIR and entry.is_dir():
                folders.append(entry.path)
    if len(folders) > 1:
        with os.scandir(folders[1]) as entries:
            for entry in entries:
                if entry.is_dir():
                    with os.scandir(entry.path) as inside:
                        if any(_temporary(e.name) for e in inside):
                            return True
    return False


def _temporary(name: str) -> bool:
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".tmp.wal"))


def _header(fh: Any) -> dict[str, Any] | None:
    """The lookup's header, or None when it is not an intact lookup of this format."""
    start = fh.read(len(MAGIC) + 4)
    if len(start) != len(MAGIC) + 4 or not start.startswith(MAGIC):
        return None
    (size,) = struct.unpack_from("<I", start, len(MAGIC))
    raw = fh.read(size)
    digest = fh.read(32)
    if len(raw) != size or hashlib.sha256(raw).digest() != digest:
        return None
    head = json.loads(raw)
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        return None
    if not isinstance(head.get("variants"), dict) or head.get("block") != BLOCK:
        return None
    head["body"] = len(MAGIC) + 4 + size + 32  # where the sections' offsets count from
    return head


def _stamp(st: os.stat_result) -> list[int]:
    """What the lookup records of its states file: :func:`pipeline.store.footers.signature`
    (inode, modification time, size) and the inode's change time, which a writer cannot set
    back as it can the modification time (the standard library's own, so that this module loads
    alone)."""
    return [st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns]


def _same_file(source: str, head: dict[str, Any], made_ns: int) -> bool:
    """Whether ``source`` is the file the lookup (last written at ``made_ns``) was made from:
    its recorded stamp, older than the lookup; else its size and sha256 (up to
    :data:`MAX_HASH_BYTES`)."""
    with _open_regular(source) as fh:
        st = os.fstat(fh.fileno())
        if _stamp(st) == head.get("stamp") and st.st_ctime_ns < made_ns:
            return True
        if st.st_size != head.get("size") or st.st_size > MAX_HASH_BYTES:
            return False
        return hashlib.file_digest(fh, "sha256").hexdigest() == head.get("sha256")


class _Section:
    """A variant's values in an open lookup, read by the block, each block checked against the
    section's table of sha256 (itself checked against the header) before a byte of it is used."""

    def __init__(self, fh: Any, body: int, section: dict[str, Any]) -> None:
        self.fh = fh
        self.size = int(section["bytes"])
        blocks = -(-self.size // BLOCK)
        self.start = body + int(section["offset"]) + 32 * blocks
        if not 0 <= self.size <= os.fstat(fh.fileno()).st_size - self.start:
            raise ValueError("a section past the file's end")  # (never read that far)
        fh.seek(self.start - 32 * blocks)
        self.digests = fh.read(32 * blocks)
        if len(self.digests) != 32 * blocks:
            raise ValueError("a short table of blocks")
        if hashlib.sha256(self.digests).hexdigest() != section["blocks"]:
            raise ValueError("a damaged table of blocks")
        self.read: dict[int, bytes] = {}

    def unpack(self, fmt: str, at: int) -> Any:
        """``struct.unpack_from(fmt, values, at)[0]`` of the section's values, from checked
        blocks (an item never straddles two: blocks hold whole 8-byte items)."""
        k = at // BLOCK
        data = self.read.get(k)
        if data is None:
            self.fh.seek(self.start + k * BLOCK)
            data = self.fh.read(min(BLOCK, self.size - k * BLOCK))
            if hashlib.sha256(data).digest() != self.digests[32 * k : 32 * k + 32]:
                raise ValueError("a damaged block")
            self.read[k] = data
        return struct.unpack_from(fmt, data, at - k * BLOCK)[0]


def _find(values: _Section, section: dict[str, Any], state_id: int) -> float | None:
    """The value of ``state_id`` in a section (None: not there)."""
    count = int(section["count"])
    if section["dense"]:
        k = state_id - int(section["low"])
        if not 0 <= k < count or values.size != 8 * count:
            return None
        return float(values.unpack("<d", 8 * k))
    if values.size != 16 * count:
        return None
    lo, hi = 0, count  # a binary search over the sorted ids
    while lo < hi:
        mid = (lo + hi) // 2
        if values.unpack("<q", 8 * mid) < state_id:
            lo = mid + 1
        else:
            hi = mid
    if lo == count or values.unpack("<q", 8 * lo) != state_id:
        return None
    return float(values.unpack("<d", 8 * (count + lo)))


# -- writing (at a commit: pyarrow and numpy) ---------------------------------------------------


def refresh(data_dir: Path, written: Iterable[str]) -> None:
    """Write the lookup of every states file among ``written`` (file names relative to
    ``data_dir``, as a commit renames them), or remove it where it cannot be made. Never
    raises for a file (a lookup only saves time); an interrupt still stops it."""
    from pathlib import Path

    for relative in written:
        parts = Path(relative).parts
        own = len(parts) == 3 and parts[0] == OWN_DIR and parts[2] == "states.parquet"
        if relative == "states.parquet" or own:
            source = Path(data_dir) / relative
            try:
                write(source, shared=not own)
            except Exception:
                with contextlib.suppress(OSError):
                    os.unlink(lookup_path(source))


def write(source: Path, shared: bool) -> bool:
    """Write the lookup of the states file ``source`` (``shared``: rows by variant; else the
    whole file is the variant of its folder); False (any old lookup removed) when its values
    would be over :data:`MAX_BODY_BYTES` or its columns do not allow one."""
    from pathlib import Path

    from pipeline.store.files import write_file_atomic

    target = lookup_path(source)
    with open(source, "rb") as fh:  # (stamped before it is read: a later change never matches)
        st = os.fstat(fh.fileno())
        small = st.st_size <= MAX_HASH_BYTES
        digest = hashlib.file_digest(fh, "sha256").hexdigest() if small else ""
    sections = _sections(source, shared)
    if sections is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        return False
    head: dict[str, Any] = {
        "format": FORMAT,
        "source": source.name,
        "size": st.st_size,
        "sha256": digest,
        "stamp": _stamp(st),
        "shared": shared,
        "block": BLOCK,
        "variants": {},
    }
    tables: list[bytes] = []
    at = 0  # offsets from the end of the header
    for name, (blob, low, count, dense) in sections.items():
        table = b"".join(
            hashlib.sha256(blob[i : i + BLOCK]).digest() for i in range(0, len(blob), BLOCK)
        )
        head["variants"][name] = {
            "offset": at,
            "bytes": len(blob),
            "blocks": hashlib.sha256(table).hexdigest(),
            "low": low,
            "count": count,
            "dense": dense,
        }
        tables.append(table)
        at += len(table) + len(blob)
    raw = json.dumps(head, sort_keys=True).encode()

    def put(out: Any) -> None:
        out.write(MAGIC + struct.pack("<I", len(raw)) + raw + hashlib.sha256(raw).digest())
        for table, (blob, *_) in zip(tables, sections.values(), strict=True):
            out.write(table)
            out.write(blob)

    write_file_atomic(Path(target), put)
    return True


def _sections(source: Path, shared: bool) -> dict[str, tuple[memoryview, int, int, bool]] | None:
    """Each variant's values (bytes, lowest id, count, dense) by name, or None where the file
    holds no usable columns or its values would be over :data:`MAX_BODY_BYTES`. Read a batch
    at a time, twice (the ids' range, then the values), so that a board's 20 million states cost
    their dense values and little more."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = pq.read_metadata(source)
    if 8 * meta.num_rows > MAX_BODY_BYTES:
        return None  # (a value is 8 bytes at least: not even read)
    schema = meta.schema.to_arrow_schema()
    need = ["state_id", "value", "objective", *(["variant"] if shared else [])]
    if any(c not in schema.names for c in need):
        return None
    if not pa.types.is_integer(schema.field("state_id").type):
        return None
    if not pa.types.is_floating(schema.field("value").type):
        return None
    ranges = _ranges(source, shared)
    dense = {n for n, (low, top, rows) in ranges.items() if top - low < DENSE_FACTOR * rows + 1024}
    planned = sum(
        8 * (top - low + 1) if n in dense else 16 * rows for n, (low, top, rows) in ranges.items()
    )
    return None if planned > MAX_BODY_BYTES else _gather(source, shared, ranges, dense)


def _ranges(source: Path, shared: bool) -> dict[str, tuple[int, int, int]]:
    """(lowest id, highest, rows) of each variant whose every row has a state id and an
    objective (the others: the Parquet answer says what is wrong)."""
    import pyarrow.compute as pc

    ranges: dict[str, tuple[int, int, int]] = {}
    unusable: set[str] = set()
    for name, part in _parts(source, shared, ["state_id", "objective"]):
        ids = part.column("state_id")
        if not len(part):
            continue  # (an empty file's one batch)
        if ids.null_count or part.column("objective").null_count:
            unusable.add(name)
            continue
        low, top = (x.as_py() for x in pc.min_max(ids).values())
        was = ranges.get(name, (low, top, 0))
        ranges[name] = (min(was[0], low), max(was[1], top), was[2] + len(part))
    return {name: r for name, r in ranges.items() if name not in unusable}


def _gather(
    source: Path, shared: bool, ranges: dict[str, tuple[int, int, int]], dense: set[str]
) -> dict[str, tuple[memoryview, int, int, bool]]:
    """The sections of the variants of ``ranges`` (``dense`` ones by id from the lowest, the
    others as sorted ids and their values); none for a variant with a state twice (which row an
    answer reads is not for this file to say)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    into = {n: np.full(ranges[n][1] - ranges[n][0] + 1, math.nan, "<f8") for n in dense}
    seen = {n: np.zeros(into[n].size, bool) for n in dense}
    sparse: dict[str, list[tuple[Any, Any]]] = {n: [] for n in ranges if n not in dense}
    for name, part in _parts(source, shared, ["state_id", "value"]):
        if name not in ranges:
            continue
        ids = part.column("state_id").cast(pa.int64()).to_numpy()
        values = pc.fill_null(part.column("value").cast(pa.float64()), math.nan).to_numpy()
        if name in sparse:
            sparse[name].append((ids, values))
        else:
            into[name][ids - ranges[name][0]] = values
            seen[name][ids - ranges[name][0]] = True
    out: dict[str, tuple[memoryview, int, int, bool]] = {}
    for name in dense:
        if np.count_nonzero(seen[name]) == ranges[name][2]:
            out[name] = (into[name].data.cast("B"), ranges[name][0], int(into[name].size), True)
    for name, parts in sparse.items():
        ids = np.concatenate([i for i, _ in parts])
        order = np.argsort(ids, kind="stable")
        ids, values = ids[order], np.concatenate([v for _, v in parts])[order]
        if not (np.diff(ids) == 0).any():
            blob = np.concatenate([ids.astype("<i8").view("u1"), values.astype("<f8").view("u1")])
            out[name] = (blob.data.cast("B"), 0, int(ids.size), False)
    return dict(sorted(out.items()))


def _parts(source: Path, shared: bool, columns: list[str]) -> Iterable[tuple[str, Any]]:
    """(variant, its rows of a batch of ``source``'s ``columns``): the shared file by its
    ``variant`` column, a variant's own file all its folder's."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with pq.ParquetFile(source) as parquet:
        for batch in parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=[*columns, *(["variant"] if shared else [])]
        ):
            if not shared:
                yield source.parent.name, batch
                continue
            names = pc.dictionary_encode(batch.column("variant").cast(pa.string()))
            codes = pc.fill_null(names.indices, -1).to_numpy(zero_copy_only=False)
            for k, name in enumerate(names.dictionary.to_pylist()):
                yield str(name), batch.filter(pa.array(codes == k))
