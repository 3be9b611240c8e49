"""Where tables live in a data directory, and the lock that keeps readers and writers apart.

Kept free of polars and pyarrow: a lookup (`stb-pipeline expect`) needs only paths, and the lock
(filelock, loaded when a lock is taken) only when a commit was interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import PipelineError, TableError
from pipeline.store.files import _fsync_dir, _pid_alive, _tmp_pid, why, write_bytes_atomic
from pipeline.store.listing import (  # noqa: F401  (part of this module's interface)
    OWN_DIR,
    all_table_files,
    rebuild_hint,
    table_files,
    table_path,
)

LOCK_NAME = ".stb.lock"
LOCK_TIMEOUT_S = 600
JOURNAL_NAME = ".stb-commit.json"


def default_data_dir() -> Path:
    """Where the tables are read from by default: ``$STB_DATA_DIR``, else ``data``."""
    return Path(os.environ.get("STB_DATA_DIR", "data"))


def built_elsewhere(data_dir: Path, how: str) -> str:
    """What a "not built" error leads with when ``data_dir`` holds no table at all: most likely
    the command ran from another folder than the one built into, which ``how`` names (the
    option or argument that does); empty when it holds tables."""
    folder = Path(data_dir)
    with contextlib.suppress(OSError):
        if any(any(folder.glob(p)) for p in ("*.parquet", "*/*.parquet", "*/*/*.parquet")):
            return ""
    return f"{os.path.abspath(folder)} holds no tables (built in another folder? {how} names it)"


@contextlib.contextmanager
def data_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock (waits for another build to finish)."""
    from filelock import FileLock, Timeout

    data_dir = Path(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(data_dir / LOCK_NAME), timeout=LOCK_TIMEOUT_S)
        lock.acquire()
    except Timeout:
        raise PipelineError(f"another build has held {data_dir} for {LOCK_TIMEOUT_S} s") from None
    except OSError as exc:
        raise PipelineError(f"cannot use data directory {data_dir}: {why(data_dir, exc)}") from None
    try:
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
            f"cannot write to data directory {data_dir}: {why(data_dir, exc)}"
        ) from None
    from pipeline.store import manifest

    sweep(data_dir)
    manifest.read(data_dir)  # a damaged manifest is reported now, not after the work


def sweep(data_dir: Path) -> None:
    """Finish an interrupted commit and remove temporary files of dead writers, if the lock is
    free now; when another build holds it, that build sweeps (never wait here)."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(Path(data_dir) / LOCK_NAME), timeout=0)
    try:
        lock.acquire()
    except (Timeout, OSError):
        return
    try:
        recover(data_dir)
    finally:
        lock.release()


def settle(data_dir: Path, sweep: bool = True) -> None:
    """Before reading: wait for a commit in progress, or finish one that was interrupted, and
    (``sweep``) remove the temporary files of writers that are gone, so that a data directory
    never carries them unseen after any command.

    Costs a stat and a listing of the directory when there is nothing to do; if the directory
    is read-only the tables are read as they are.
    """
    if (Path(data_dir) / JOURNAL_NAME).exists():
        with contextlib.suppress(PipelineError), data_lock(data_dir):
            pass
    if sweep:
        remove_stale(data_dir)


def unfinished_commit(data_dir: Path) -> str | None:
    """Why a commit cut short is still pending in ``data_dir`` after a try to finish it (waiting
    for a build that holds the lock); None when there is none. A journal left in place means
    the tables are neither surely the old ones nor the new ones, so `verify` fails on it."""
    journal = Path(data_dir) / JOURNAL_NAME
    if not journal.exists():
        return None
    try:
        with data_lock(data_dir):
            pass
    except PipelineError as exc:
        return f"{journal.name} (a commit cut short): {exc}"
    return None


def recover(data_dir: Path) -> None:
    """Finish a commit whose journal is in place (renames, manifest, then the catalog
    ``stb.duckdb`` rewritten for the new tables), and remove dead writers' temporary files.

    The caller holds :func:`data_lock`. Safe to run again after being interrupted itself.
    PipelineError when the catalog cannot be written (the commit is finished all the same).
    """
    data_dir = Path(data_dir)
    journal_path = data_dir / JOURNAL_NAME
    if journal_path.exists():
        from pipeline.store import manifest  # (hashlib) only to finish a commit

        try:
            journal = json.loads(journal_path.read_text())
            renames, new_manifest = journal["renames"], journal["manifest"]
        except (OSError, ValueError, KeyError, TypeError):
            # only a complete journal ever gets this name; an unreadable one is not ours
            raise TableError(f"{journal_path} is unreadable; move it away") from None
        try:
            for tmp_name, final_name in renames:
                tmp = data_dir / tmp_name
                if tmp.exists():
                    os.replace(tmp, data_dir / final_name)
            _fsync_dir(data_dir)
            write_bytes_atomic(manifest.manifest_path(data_dir), manifest.dumps(new_manifest))
            # before the journal goes: a commit cut short here rewrites the catalog when it
            # is finished
            unwritten = _write_catalog(data_dir)
            # the one-shot `expect`'s values beside each states file written (pipeline.store.lookup)
            from pipeline.store import lookup

            lookup.refresh(data_dir, [final for _, final in renames])
            journal_path.unlink()
            _fsync_dir(data_dir)
        except OSError as exc:
            raise PipelineError(
                f"cannot finish the interrupted commit in {data_dir}: {exc.strerror or exc}"
            ) from None
        if unwritten is not None:
            remove_stale(data_dir)
            raise unwritten
    remove_stale(data_dir)


def _write_catalog(data_dir: Path) -> PipelineError | None:
    """Rewrite the catalog of the tables just committed (:mod:`pipeline.store.catalog`); the
    error to raise once the commit is done when it cannot be, the old catalog removed then (it
    would show other tables than these)."""
    from pipeline.store import catalog

    try:
        catalog.refresh(data_dir, check=False)
    except PipelineError as exc:
        with contextlib.suppress(PipelineError):  # the first error names it, says what to do
            catalog.remove(data_dir)
        return PipelineError(f"the tables are written, but not the catalog: {exc}")
    return None


def stale_temporaries(data_dir: Path) -> list[Path]:
    """Temporary files whose writer is gone (a build killed with SIGKILL, a lost machine): the
    process id in their name is no longer running. A live writer's files are never listed."""
    data_dir = Path(data_dir)
    found = [*data_dir.glob(".*.tmp"), *data_dir.glob(f"{OWN_DIR}/*/.*.tmp")]
    # DuckDB's write-ahead log beside a temporary catalog: its writer's is the catalog's
    wal = [(p, p.with_suffix("")) for p in data_dir.glob(".*.tmp.wal")]
    return sorted(
        [p for p in found if not _pid_alive(_tmp_pid(p))]
        + [p for p, tmp in wal if not _pid_alive(_tmp_pid(tmp))]
    )


def remove_stale(data_dir: Path) -> list[Path]:
    """Remove :func:`stale_temporaries` (those that can be: a read-only directory keeps them);
    the files removed. Safe without the lock: no live process owns them."""
    removed = []
    for stray in stale_temporaries(data_dir):
        with contextlib.suppress(OSError):
            stray.unlink(missing_ok=True)
            removed.append(stray)
    return removed


def own_key(variant: str, table: str) -> str:
    """The key (path below the data directory, without .parquet) of a variant's own table."""
    return f"{OWN_DIR}/{variant}/{table}"


def logical_name(key: str) -> str:
    """The table a key names: ``policy`` for both ``policy`` and ``variants/x/policy``."""
    return key.rsplit("/", 1)[-1]


def variant_file(data_dir: Path, table: str, variant: str) -> Path:
    """The file holding ``variant``'s rows of ``table``: its own file if it has one."""
    own = table_path(data_dir, own_key(variant, table))
    return own if own.exists() else table_path(data_dir, table)
