"""Where tables live in a data directory, and the lock that keeps readers and writers apart.

Kept free of polars and pyarrow: a lookup (`stb-pipeline expect`) needs only paths and the lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from pipeline.errors import PipelineError

LOCK_NAME = ".stb.lock"
LOCK_TIMEOUT_S = 600
JOURNAL_NAME = ".stb-commit.json"


def table_path(data_dir: Path, name: str) -> Path:
    """Where table ``name`` lives."""
    return Path(data_dir) / f"{name}.parquet"


@contextlib.contextmanager
def data_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock (waits for another build to finish)."""
    data_dir = Path(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(data_dir / LOCK_NAME), timeout=LOCK_TIMEOUT_S)
        lock.acquire()
    except Timeout:
        raise PipelineError(f"another build has held {data_dir} for {LOCK_TIMEOUT_S} s") from None
    except OSError as exc:
        raise PipelineError(f"cannot use data directory {data_dir}: {exc.strerror}") from None
    try:
        from pipeline.store.tables import recover  # the commit machinery, only under the lock

        recover(data_dir)
        yield
    finally:
        lock.release()


def ensure_writable(data_dir: Path) -> None:
    """Fail now, before any work, when tables cannot be written into ``data_dir``."""
    data_dir = Path(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with open(data_dir / LOCK_NAME, "a"):
            pass
    except OSError as exc:
        raise PipelineError(
            f"cannot write to data directory {data_dir}: {exc.strerror or exc}"
        ) from None


def settle(data_dir: Path) -> None:
    """Before reading: wait for a commit in progress, or finish one that was interrupted.

    Does nothing (one stat) when no journal is present; if the directory is read-only the
    tables are read as they are.
    """
    if (Path(data_dir) / JOURNAL_NAME).exists():
        with contextlib.suppress(PipelineError), data_lock(data_dir):
            pass
