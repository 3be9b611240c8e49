"""Writing one file atomically: a temporary file beside it, flushed, then renamed over it.

Every output of the pipeline goes through here (tables, the journal, the manifest, query results,
charts, verifier files), so a reader never sees half a file and a crash leaves the old one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from pipeline.errors import PipelineError


def _tmp_name(final: Path) -> Path:
    """A hidden temporary name next to ``final``, owned by this process."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


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
        # a pipe, a terminal or /dev/stdout: nothing to rename over, so write straight in
        try:
            with open(path, "wb") as fh:
                write(fh)
        except OSError as exc:
            raise PipelineError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    if path.is_symlink():
        path = path.resolve()  # replace the file the link points to, never the link itself
    tmp = _tmp_name(path)
    try:
        _write_synced(tmp, write)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PipelineError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
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
