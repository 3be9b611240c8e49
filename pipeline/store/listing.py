"""The one listing of a data directory's table files, and how to name one that is damaged.

A table lives in a shared file (``<table>.parquet``, many variants) and in the files of the
variants stored on their own (``variants/<variant>/<table>.parquet``). Every reader lists them
here (:func:`all_table_files`), the freshness look of :mod:`pipeline.store.directory`, the
readers' :mod:`pipeline.store.sources` and the contracts alike. A leaf of the store: it imports
no other module of it.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.errors import TableError, TablesMissingError, first_line

#: Folder of the data directory that holds the variants stored in files of their own (large
#: boards and big custom rule sets), one sub-folder each: variants/<variant>/<table>.parquet.
OWN_DIR = "variants"
#: What a table name looks like (a file stem); other files are not tables.
TABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")


def table_path(data_dir: Path, name: str) -> Path:
    """Where table ``name`` lives."""
    return Path(data_dir) / f"{name}.parquet"


def table_files(data_dir: Path, table: str) -> list[Path]:
    """Every file holding rows of ``table`` (a table's name, or a file's key such as
    ``variants/x/states``): the shared file, then the variants' own files by variant name."""
    data_dir = Path(data_dir)
    shared = table_path(data_dir, table)
    own = sorted(data_dir.glob(f"{OWN_DIR}/*/{table}.parquet"))
    return ([shared] if shared.is_file() else []) + own


def all_table_files(data_dir: Path) -> dict[str, list[Path]]:
    """Every table of a data directory and its files, as :func:`table_files` lists one's."""
    data_dir = Path(data_dir)
    found: dict[str, list[Path]] = {}
    for pattern in ("*.parquet", f"{OWN_DIR}/*/*.parquet"):
        for path in sorted(data_dir.glob(pattern)):
            if TABLE_NAME.fullmatch(path.stem) and path.is_file():
                found.setdefault(path.stem, []).append(path)
    return dict(sorted(found.items()))


def rebuild_hint(path: Path, variant: str | None = None) -> str:
    """How to rebuild the table file ``path`` that cannot be read, said with its variant's name:
    ``variant``, or the one whose own file it is (``variants/NAME/...``); a shared file holds
    many variants, and the manifest says which."""
    path = Path(path)
    if variant is None and path.parent.parent.name == OWN_DIR:
        variant = path.parent.name
    if variant is not None:
        return f"rebuild it (stb-pipeline build --force --variant {variant})"
    return (
        "move it away and rebuild the variants it held "
        "(stb-pipeline build --force --variant all, and any other variants you use)"
    )


def unreadable(path: Path, exc: BaseException, most: int | None = None) -> TableError:
    """The one line for a table file that cannot be read: its path, the reader's own first line
    (cut to ``most`` characters where given) and how to rebuild it (:func:`rebuild_hint`)."""
    return TableError(
        f"{path} is not a readable table ({first_line(exc)[:most]}); {rebuild_hint(Path(path))}"
    )


def not_built(path: Path, variant: str) -> TablesMissingError:
    """The one line for a table file that does not exist, with the command that builds it."""
    return TablesMissingError(
        f"{path} does not exist: run `stb-pipeline build --variant {variant}` "
        "(or build with the same custom rule options) first"
    )


def no_rows(path: Path, variant: str) -> TablesMissingError:
    """The one line for a table file without rows of ``variant``, with the command that builds
    them."""
    return TablesMissingError(
        f"{path} has no rows for variant {variant!r}: run `stb-pipeline build --variant "
        f"{variant}` (or build with the same custom rule options) first"
    )
