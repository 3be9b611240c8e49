"""Writing one file atomically: a temporary file beside it, flushed, then renamed over it.

Every output of the pipeline goes through here (tables, the journal, the manifest, query results,
charts, verifier files), so a reader never sees half a file and a crash leaves the old one.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import queue
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from pipeline.errors import PipelineError

#: Bytes a :class:`HashedFile` lets pile up before it pushes them to disk in the background.
SYNC_EVERY = 64 << 20
#: The native buffer in front of a :class:`HashedFile` given to pyarrow (bytes).
ARROW_BUFFER = 4 << 20


def _tmp_name(final: Path) -> Path:
    """A hidden temporary name next to ``final``, owned by this process."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def final_name(path: Path) -> Path:
    """The file a temporary name stands for (``.t.parquet.123.tmp`` -> ``t.parquet``, through
    every layer of temporary names), for messages a person reads; other paths unchanged."""
    while m := re.fullmatch(r"\.(.+)\.\d+\.tmp", path.name):
        path = path.with_name(m.group(1))
    return path


def cannot_write(path: Path, exc: OSError) -> PipelineError:
    """The one-line error for a table file that could not be written (a full disk, say)."""
    return PipelineError(f"cannot write {final_name(path)}: {why(path, exc)}")


def why(path: Path, exc: OSError) -> str:
    """The reason ``exc`` gives, said of the path a person typed: for a folder that is a file
    ("Not a directory", "File exists" from mkdir), which one it is."""
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        for parent in Path(path).parents:
            if parent.is_file():
                return f"{parent} is a file, not a folder"
        if Path(path).is_file() and exc.errno == errno.EEXIST:
            return f"{path} is a file, not a folder"
    return str(exc.strerror or exc)


def _tmp_pid(path: Path) -> int:
    """The process id in a temporary file's name (0 when it has none)."""
    parts = path.name.rsplit(".", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0


def _pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (ours to wait for)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HashedFile:
    """A new binary file that knows the sha256 of its bytes once closed, without reading them
    back: what is written is hashed on a helper thread, which also pushes the bytes to disk
    every :data:`SYNC_EVERY` bytes, so that closing a table of gigabytes neither re-reads it
    nor waits for all of it to reach the disk. Give pyarrow's writers :meth:`arrow_stream`."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "wb")  # noqa: SIM115 (closed by close or abandon)
        self._hash = hashlib.sha256()
        self._pending: queue.Queue[bytes | None] = queue.Queue(maxsize=64)
        self._error: OSError | None = None
        self._since_sync = 0
        self._arrow: Any = None
        self._abandoned = False
        self.sha256: str | None = None
        """The hex digest of the bytes, set by :meth:`close`."""
        self._helper = threading.Thread(target=self._run, name="stb-hash", daemon=True)
        self._helper.start()

    def arrow_stream(self) -> Any:
        """The file as a pyarrow output stream with a native buffer in front: a Parquet writer
        makes over a thousand small writes per row group (page headers), which the buffer
        gathers without taking the GIL into a few large writes here."""
        import pyarrow as pa

        if self._arrow is None:
            raw = pa.PythonFile(self, mode="w")
            self._arrow = pa.BufferedOutputStream(raw, buffer_size=ARROW_BUFFER)
        return self._arrow

    def write(self, data: Any) -> int:
        """Write ``data`` (bytes or a buffer) and queue a copy of it for hashing."""
        if self._abandoned:
            return len(data)
        n = self._fh.write(data)
        self._pending.put(bytes(data))
        return n

    def tell(self) -> int:
        """Bytes written so far."""
        return self._fh.tell()

    def flush(self) -> None:
        """Flush Python's buffer to the operating system."""
        self._fh.flush()

    def fileno(self) -> int:
        """The file descriptor."""
        return self._fh.fileno()

    def writable(self) -> bool:
        """Always: the file is open for writing."""
        return True

    @property
    def closed(self) -> bool:
        """Whether the file is closed."""
        return self._fh.closed

    def close(self) -> None:
        """Flush the file to disk, close it and set :attr:`sha256`; raise the OSError of a
        background sync that failed (a full disk), if any."""
        if self._fh.closed:
            return
        if self._arrow is not None:  # its buffer's last bytes (it stays attached: see abandon)
            self._arrow.flush()
        self._stop_helper()
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        if self._error is not None:
            raise self._error
        self.sha256 = self._hash.hexdigest()

    def abandon(self, writer: Any = None) -> None:
        """Close without syncing (the file is about to be removed); never raises. ``writer``
        (the ParquetWriter on :meth:`arrow_stream`, if any) is closed first, its errors
        ignored: its footer goes nowhere, and it is not used after the file."""
        if self._fh.closed:
            return
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        # The arrow stream stays attached (a writer still holding it must not crash): what it
        # flushes from now on is dropped by write.
        self._abandoned = True
        self._stop_helper()
        with contextlib.suppress(OSError):
            self._fh.close()

    def _stop_helper(self) -> None:
        self._pending.put(None)
        self._helper.join()

    def _run(self) -> None:
        while (chunk := self._pending.get()) is not None:
            self._hash.update(chunk)
            self._since_sync += len(chunk)
            if self._since_sync >= SYNC_EVERY and self._error is None:
                self._since_sync = 0
                try:
                    os.fdatasync(self._fh.fileno())
                except OSError as exc:  # raised by close
                    self._error = exc


def _write_synced(path: Path, write: Any) -> None:
    """Create ``path`` with ``write(file)`` and flush it to disk."""
    with open(path, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def write_file_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Create ``path`` with ``write(file)``: under a temporary name, flushed to disk, then
    renamed into place, so no reader ever sees a partial file under the final name."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # a pipe, a device or /dev/stdout: nothing to rename over, so write straight in, from a
        # buffer (a writer that seeks back, as numpy's .npz does, cannot seek a pipe, and
        # /dev/null says it is at 0 wherever it is)
        buffer = io.BytesIO()
        write(buffer)
        try:
            path.write_bytes(buffer.getbuffer())
        except OSError as exc:
            raise PipelineError(f"cannot write {path}: {why(path, exc)}") from None
        return
    if path.is_symlink():
        path = path.resolve()  # replace the file the link points to, never the link itself
    tmp = _tmp_name(path)
    try:
        _write_synced(tmp, write)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # its folder may be a file: then there is no tmp
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise PipelineError(f"cannot write {path}: {why(path, exc)}") from None
        raise
    _fsync_dir(path.parent)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`write_file_atomic`)."""
    write_file_atomic(path, lambda fh: fh.write(data))


def _fsync_dir(directory: Path) -> None:
    """Flush a directory's entries (renames) to disk, where the platform allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
