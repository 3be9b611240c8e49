"""The catalog: ``stb.duckdb`` beside the tables, one DuckDB database of views over them all.

``duckdb data/stb.duckdb -c "from policy where variant = 'four-player' limit 5"`` reads any
variant, whichever file holds it, with the views of :mod:`pipeline.store.views` (the ones
`stb-pipeline query` and `verify` run), plus ``stb_catalog``: what wrote it and where it points.

Every command that changes the tables rewrites it (:func:`refresh`, called as a commit ends, in
:func:`pipeline.store.layout.recover`), and so does any build that finds it missing or out of
date. It is written whole under a temporary name and renamed into place: a reader that has the
old file open keeps reading the old views, and the file is never opened for writing in place,
so no lock of ours is ever held on it. The file is written in DuckDB's storage format of
version 1.0, which every DuckDB from 1.0 on reads (the duckdb module that writes it may be newer
than the duckdb command that reads it); the views need DuckDB 1.1 (``getvariable``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from pipeline._version import __version__
from pipeline.errors import PipelineError, first_line
from pipeline.store import sources, views
from pipeline.store.engine import available, engine
from pipeline.store.files import _fsync_dir, _tmp_name, why

CATALOG_NAME = "stb.duckdb"
#: The view that says what wrote the catalog and which directory it reads (key, value).
INFO_VIEW = "stb_catalog"
#: DuckDB's storage format the file is written in (readable by DuckDB 1.0 and later).
STORAGE_VERSION = "v1.0.0"
#: Bumped when the views change shape, so that a catalog from an older version is rewritten
#: (2: the views refuse to answer from a catalog copied or moved away from its tables).
FORMAT = 2


def catalog_path(data_dir: Path) -> Path:
    """Where a data directory's catalog lives."""
    return Path(data_dir) / CATALOG_NAME


def definitions(data_dir: Path) -> list[str]:
    """The ``create view`` statements of the views over ``data_dir``'s tables (absolute paths,
    each view guarded against being read from a copy of the catalog elsewhere); TableError when
    a table file is not one of ours."""
    root = Path(data_dir).resolve()
    tables = sources.data_files(root)
    # DuckDB lists an open database by its real path; the path as given too, in case a DuckDB
    # does not resolve symbolic links
    places = dict.fromkeys([str(root / CATALOG_NAME), os.path.abspath(catalog_path(data_dir))])
    guarded = views.guard(root, list(places), CATALOG_NAME)
    return views.statements(tables, root, guarded=guarded) + views.unbuilt_statements(tables)


def fingerprint(statements: list[str]) -> str:
    """What identifies a catalog's views (the sha256 of their definitions and the format)."""
    text = f"format {FORMAT}\n" + ";\n".join(statements)
    return hashlib.sha256(text.encode()).hexdigest()


def state(data_dir: Path, statements: list[str] | None = None) -> str:
    """How the catalog stands against the tables (``statements``: their views, when known):
    ``current``; ``missing`` (tables but no catalog); ``stale`` (views other than the tables'
    now: a build cut short before it, a directory moved or copied, or a catalog left where no
    table is); ``changed`` (it records the tables' views, but what it holds is not what was
    written: a view replaced, dropped or added by hand, a macro added); ``busy`` (another
    process holds it open for writing, the duckdb command without -readonly, so it cannot be
    read now)."""
    statements = definitions(data_dir) if statements is None else statements
    path = catalog_path(data_dir)
    if not path.exists() or not available():  # without DuckDB no catalog is read or written
        return "missing" if statements else "current"
    found = read_back(path)
    if found is None:
        return "busy"
    info, held = found
    if not statements or info.get("fingerprint") != fingerprint(statements):
        return "stale"
    return "current" if info.get("views") == digest(held) else "changed"


def read_back(path: Path) -> tuple[dict[str, str], dict[str, str]] | None:
    """What a catalog file records about itself (:data:`INFO_VIEW`'s keys and values; none: not
    one of ours, or damaged) and what it holds (:func:`objects`); None when it cannot be
    opened now (another process holds it for writing)."""
    duck = engine()
    con = duck.connect()
    try:
        try:
            con.execute(f"attach {views.literal(str(path))} as old (read_only)")
        except duck.Error as exc:
            return None if "lock" in str(exc).lower() else ({}, {})
        try:
            held = objects(con, "old")
            rows = con.execute(f"select key, value from old.{INFO_VIEW}").fetchall()
        except duck.Error:
            return {}, {}
        return {str(k): str(v) for k, v in rows}, held
    finally:
        con.close()


def objects(con: Any, database: str) -> dict[str, str]:
    """What a database holds beside :data:`INFO_VIEW`, by name: each view's definition as
    DuckDB writes it back, and each table, macro or sequence by its kind (a catalog holds none
    of these: one was added by hand, and a macro could stand in for a function the views
    call)."""
    query = (
        "select view_name, sql from duckdb_views() where database_name = $d and not internal "
        "union all select 'table ' || table_name, 'table' from duckdb_tables() "
        "where database_name = $d "
        "union all select 'function ' || function_name, function_type from duckdb_functions() "
        "where database_name = $d and not internal "
        "union all select 'sequence ' || sequence_name, 'sequence' from duckdb_sequences() "
        "where database_name = $d"
    )
    rows = con.execute(query, {"d": database}).fetchall()
    return {str(name): str(sql) for name, sql in rows if name != INFO_VIEW}


def digest(held: dict[str, str]) -> str:
    """The sha256 of what a catalog holds (:func:`objects`), whatever order it was listed in."""
    text = "\n".join(f"{name}\t{sql}" for name, sql in sorted(held.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def refresh(data_dir: Path, check: bool = True) -> bool:
    """Rewrite the catalog unless it is ``current`` (``check`` False: whatever it is, as after
    a commit), or remove it when there are no tables; True when it was written. The caller
    holds the data directory's lock. PipelineError (naming the file) when a table file is not
    ours or the catalog cannot be written."""
    statements = definitions(data_dir)
    if check and state(data_dir, statements) == "current":
        return False
    if not statements or not available():
        # without DuckDB (a GPU machine running the full game's build) the tables are written
        # and the catalog is not: an old one would show other tables, so it goes, and
        # `verify --fix` on a machine with DuckDB writes it
        remove(data_dir)
        return False
    write(data_dir, statements)
    return True


def write(data_dir: Path, statements: list[str]) -> Path:
    """Write the catalog of ``statements`` atomically: a temporary file beside it, flushed to
    disk, then renamed over the old one."""
    final = catalog_path(data_dir)
    tmp = _tmp_name(final)
    duck = engine()
    _remove_temporary(tmp)
    con = duck.connect()
    try:
        con.execute("set enable_object_cache = true")  # each footer read once, not per bind
        con.execute(
            f"attach {views.literal(str(tmp))} as stb (storage_version '{STORAGE_VERSION}')"
        )
        con.execute("use stb")
        con.execute("begin")  # one transaction: one write to the log, not one per view
        for statement in statements:
            con.execute(statement)
        con.execute("commit")
        con.execute("use memory")
        con.execute("detach stb")  # checkpoints and closes it: everything is in the file
        # what the file holds, read back as any later reader reads it (DuckDB writes a view's
        # text back in its own words: lambdas, case, the order of a `replace` list), recorded
        # beside the fingerprint so that a view changed by hand is told from the tables' own
        con.execute(f"attach {views.literal(str(tmp))} as stb")
        held = digest(objects(con, "stb"))
        con.execute("use stb")
        con.execute(info_view(data_dir, statements, held))
        con.execute("use memory")
        con.execute("detach stb")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        # a write-ahead log beside it is a session's that opened the old catalog for writing:
        # DuckDB would replay it on the new file
        final.with_name(final.name + ".wal").unlink(missing_ok=True)
    except duck.Error as exc:
        raise PipelineError(f"cannot write {final}: {first_line(exc)[:200]}") from None
    except OSError as exc:
        raise PipelineError(f"cannot write {final}: {why(final, exc)}; {MOVE_AWAY}") from None
    finally:
        con.close()
        _remove_temporary(tmp)
    _fsync_dir(final.parent)
    return final


def info_view(data_dir: Path, statements: list[str], held: str) -> str:
    """The ``stb_catalog`` view: the format, the fingerprint, the :func:`digest` of what the
    file holds (``held``), the version that wrote the catalog and the directory its views read
    (``stb_data_dir`` when set)."""
    root = views.root_sql(Path(data_dir).resolve())
    rows = [
        ("'format'", views.literal(str(FORMAT))),
        ("'fingerprint'", views.literal(fingerprint(statements))),
        ("'views'", views.literal(held)),
        ("'package_version'", views.literal(__version__)),
        ("'data_dir'", root),
    ]
    values = ", ".join(f"({key}, {value})" for key, value in rows)
    return f"create view {INFO_VIEW} as select * from (values {values}) as t(key, value)"


#: What to do about a catalog that cannot be replaced or removed (a folder or an immutable
#: file in its place): it is derived from the tables, so nothing is lost by moving it.
MOVE_AWAY = (
    "move it away (the catalog is made from the tables: `stb-pipeline verify --fix` writes it)"
)


def remove(data_dir: Path) -> None:
    """Remove the catalog (a directory without tables has none); PipelineError naming it when
    it cannot be (a folder of that name, an immutable file)."""
    path = catalog_path(data_dir)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PipelineError(f"cannot remove {path}: {why(path, exc)}; {MOVE_AWAY}") from None


def _remove_temporary(tmp: Path) -> None:
    """Remove a temporary catalog and the write-ahead log DuckDB may keep beside it."""
    for path in (tmp, tmp.with_name(tmp.name + ".wal")):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
