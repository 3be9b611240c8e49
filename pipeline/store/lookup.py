"""The values of a states file, kept beside it for the one-shot `expect` (``states.lookup``).

A process that answers once pays for its imports more than for its answer: numpy, DuckDB's
engine and the command line's typer are about 0.4 s of CPU, the lookup itself a few
milliseconds. A commit that writes a states file (``states.parquet``, or a variant's own
``variants/<name>/states.parquet``) therefore also writes, beside it, every variant's
``value`` column by state id in a plain binary file that the standard library reads
(:func:`value`): `stb-pipeline expect` answers from it without loading numpy, DuckDB, pyarrow,
polars, typer or rich (:mod:`pipeline.cli.lean`).

A lookup is trusted only when every check holds, and otherwise not used at all (the caller
answers from the Parquet file as before, whose errors are the command's):

- its header is intact (its sha256 follows it) and of this format;
- the states file beside it is the very file it was made from: the same size and the same
  sha256 of its bytes (hashed whole on every use: about 2 ms for the 2.5 MB of every registered
  variant, and a file over :data:`MAX_FILE_BYTES` gets no lookup), so that freshness is exact,
  not a guess from times;
- it was made for the file's place (the shared file is read by variant, a variant's own file
  whole), and the variant's section is intact (its sha256 is in the header);
- the state has a finite value there (no row, a null value, or a value that is not a number:
  the Parquet answer says what it says).

The file: ``MAGIC``, the header's length (4 bytes, little-endian), the header (JSON) and its
sha256 (32 bytes), then one section per variant (its offset counted from there): dense
(``count`` values from state id ``low``, float64 little-endian, NaN where there is no answer)
or sparse (``count`` state ids, int64, sorted, then their ``count`` values). It is written
atomically (a temporary file renamed over the old one) as a commit ends, before its journal
goes (:func:`pipeline.store.layout.recover`); a file that cannot be made (an unreadable
table, a disk full) is removed instead, which costs only speed.
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

MAGIC = b"STB-LOOKUP\n\x01"
FORMAT = 1
#: The name of a lookup, beside its states file.
NAME = "states.lookup"
#: States files larger than this get no lookup: hashing them on every answer would cost more
#: than the imports it saves (about 1.4 GB/s here: 32 MB is about 25 ms).
MAX_FILE_BYTES = 32 << 20
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
        if head.get("source") != os.path.basename(source) or not _same_file(source, head):
            return None
        section = head["variants"].get(name)
        if section is None:
            return None
        fh.seek(head["body"] + int(section["offset"]))
        data = fh.read(int(section["bytes"]))
    if len(data) != int(section["bytes"]) or hashlib.sha256(data).hexdigest() != section["sha256"]:
        return None
    found = _find(data, section, state_id)
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
    if not isinstance(head.get("variants"), dict):
        return None
    head["body"] = len(MAGIC) + 4 + size + 32  # where the sections' offsets count from
    return head


def _same_file(source: str, head: dict[str, Any]) -> bool:
    """Whether ``source`` is the file the lookup was made from: its size and sha256."""
    with _open_regular(source) as fh:
        if os.fstat(fh.fileno()).st_size != head.get("size"):
            return False
        return hashlib.file_digest(fh, "sha256").hexdigest() == head.get("sha256")


def _find(data: bytes, section: dict[str, Any], state_id: int) -> float | None:
    """The value of ``state_id`` in a section (None: not there)."""
    count = int(section["count"])
    if section["dense"]:
        k = state_id - int(section["low"])
        if not 0 <= k < count or len(data) != 8 * count:
            return None
        return float(struct.unpack_from("<d", data, 8 * k)[0])
    if len(data) != 16 * count:
        return None
    lo, hi = 0, count  # a binary search over the sorted ids
    while lo < hi:
        mid = (lo + hi) // 2
        if struct.unpack_from("<q", data, 8 * mid)[0] < state_id:
            lo = mid + 1
        else:
            hi = mid
    if lo == count or struct.unpack_from("<q", data, 8 * lo)[0] != state_id:
        return None
    return float(struct.unpack_from("<d", data, 8 * (count + lo))[0])


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
    whole file is the variant of its folder); False (any old lookup removed) when the file is
    too big or its columns do not allow one."""
    from pathlib import Path

    from pipeline.store.files import write_bytes_atomic

    target = lookup_path(source)
    with open(source, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        digest = hashlib.file_digest(fh, "sha256").hexdigest() if size <= MAX_FILE_BYTES else ""
    sections = _sections(source, shared) if digest else None
    if sections is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        return False
    head: dict[str, Any] = {
        "format": FORMAT,
        "source": source.name,
        "size": size,
        "sha256": digest,
        "shared": shared,
        "variants": {},
    }
    at = 0  # offsets from the end of the header
    for name, (_, blob, low, count, dense) in sections.items():
        head["variants"][name] = {
            "offset": at,
            "bytes": len(blob),
            "sha256": hashlib.sha256(blob).hexdigest(),
            "low": low,
            "count": count,
            "dense": dense,
        }
        at += len(blob)
    raw = json.dumps(head, sort_keys=True).encode()
    body = b"".join(blob for _, blob, *_rest in sections.values())
    header = MAGIC + struct.pack("<I", len(raw)) + raw + hashlib.sha256(raw).digest()
    write_bytes_atomic(Path(target), header + body)
    return True


def _sections(source: Path, shared: bool) -> dict[str, tuple[str, bytes, int, int, bool]] | None:
    """Each variant's section (name, bytes, lowest id, count, dense), or None where the file
    holds no usable columns."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.read_schema(source)
    need = ["state_id", "value", "objective", *(["variant"] if shared else [])]
    if any(c not in schema.names for c in need):
        return None
    if not pa.types.is_integer(schema.field("state_id").type):
        return None
    if not pa.types.is_floating(schema.field("value").type):
        return None
    table = pq.read_table(source, columns=need)
    ids = table.column("state_id").cast(pa.int64()).to_numpy()
    values = pc.fill_null(table.column("value").cast(pa.float64()), math.nan).to_numpy()
    unset = pc.is_null(table.column("objective")).to_numpy(zero_copy_only=False)
    if shared:
        names = pc.dictionary_encode(table.column("variant").cast(pa.string()).combine_chunks())
        codes = pc.fill_null(names.indices, -1).to_numpy(zero_copy_only=False)
        groups = {str(n): codes == k for k, n in enumerate(names.dictionary.to_pylist())}
    else:
        groups = {source.parent.name: np.ones(ids.shape[0], dtype=bool)}
    out: dict[str, tuple[str, bytes, int, int, bool]] = {}
    for name, rows in sorted(groups.items()):
        if not rows.any() or unset[rows].any():
            continue  # no objective somewhere: the Parquet answer says what is wrong
        mine, vals = ids[rows], values[rows]
        order = np.argsort(mine, kind="stable")
        mine, vals = mine[order], vals[order]
        if (np.diff(mine) == 0).any():
            continue  # a state twice: which row an answer reads is not for this file to say
        low, top = int(mine[0]), int(mine[-1])
        if top - low < DENSE_FACTOR * mine.size + 1024:
            dense = np.full(top - low + 1, math.nan, dtype="<f8")
            dense[mine - low] = vals
            out[name] = (name, dense.tobytes(), low, int(dense.size), True)
        else:
            blob = mine.astype("<i8").tobytes() + vals.astype("<f8").tobytes()
            out[name] = (name, blob, 0, int(mine.size), False)
    return out
