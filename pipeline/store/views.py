"""The one definition of the DuckDB views over a directory's tables.

One view per table (``states``, ``policy``, ``moves``, ``edges``, ``summary``, ``benchmarks``,
...) reads every file of the table (:mod:`pipeline.store.sources`) as one table of one schema:
the table's columns in order, null where no file holds one; the columns that a big box's files
leave to the reader filled in (tile lists and texts decoded from its bitmasks, the policy's next
state, ``stuck`` and ``kind``, an edge's ``kind``); game-specific columns after. A view ``rules``
gives each variant's rule set. `stb-pipeline query` and `verify` run these statements on an
in-memory DuckDB; the catalog file ``stb.duckdb`` (:mod:`pipeline.store.catalog`) stores them.

Each view is the union by name of one scan per file, each file of a variant stored on its own
filtered on that variant: a query asking for other variants is planned without that file's scan
(DuckDB sees the two filters contradict), and the shared file's scan skips the row groups of
other variants by their statistics, so a filtered lookup reads only the rows it asks for.

Paths are absolute, so the views work from any working directory and in any DuckDB client.
DuckDB offers no path relative to the database file a view is stored in: it reads a relative
path against the reader's working directory, ``file_search_path`` is a setting of a connection,
not stored in the file, and a table function's arguments may hold no subquery (so a view cannot
ask ``duckdb_databases()`` where its own file is). Each path starts with
``coalesce(getvariable('stb_data_dir'), '<directory>')``: a copy of the directory elsewhere is
read with ``set variable stb_data_dir = '<new place>'``. The catalog's views also carry a
:func:`guard`: opened from anywhere but the directory they read (a copy, a move), they fail
with one line saying so, instead of answering silently from the old place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.store import schema
from pipeline.store.sources import LeanSample, TableFile, columns_of

#: The DuckDB variable that points the views at another copy of the directory.
ROOT_VARIABLE = "stb_data_dir"
#: The view of the rule sets recorded in the states files, by variant.
RULES_VIEW = "rules"


def literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def root_sql(root: Path) -> str:
    """The SQL of the directory the views read: ``stb_data_dir`` when set, else ``root``."""
    return f"coalesce(getvariable({literal(ROOT_VARIABLE)}), {literal(str(root))})"


def file_sql(root: Path, f: TableFile) -> str:
    """The SQL of one file's path."""
    return f"{root_sql(root)} || {literal('/' + f.relative)}"


def view_select(
    table: str,
    files: list[TableFile],
    root: Path,
    samples: Mapping[str, LeanSample] | None = None,
) -> str:
    """The select statement of ``table``'s view over ``files`` below ``root``. ``samples`` (by
    relative path) reads a lean file through some of its row groups only (as `verify` does)."""
    parts: list[str] = []
    for f in files:
        scan = f"from read_parquet({file_sql(root, f)})"
        where = f" where variant = {literal(f.variant)}" if f.variant is not None else ""
        sample = (samples or {}).get(f.relative)
        if sample is not None:
            # one scan per row group: each reads its group alone, by the state_id statistics
            ranges = sample.ranges or ((0, -1),)  # an empty file: no rows, its columns
            keep = "where" if not where else f"{where} and"
            parts += [f"select * {scan} {keep} state_id between {a} and {b}" for a, b in ranges]
            continue
        filled = schema.tile_select(table, list(f.columns), f.tiles) if f.tiles else {}
        # the file's columns by name, not `* replace (...)`: DuckDB keeps a replace list in a
        # hash map and writes it back in another order each time the catalog is stored, and
        # the catalog's check compares the views' text (catalog.digest)
        named = [f"{filled[c]} as {ident(c)}" if c in filled else ident(c) for c in f.columns]
        named += [f"{sql} as {ident(c)}" for c, sql in filled.items() if c not in f.columns]
        items = ", ".join(named) if filled else "*"
        parts.append(f"select {items} {scan}{where}")
    present = {c for f in files for c in f.columns}
    columns = [
        ident(c) if c in present else f"null::{schema.sql_type(table, c)} as {ident(c)}"
        for c in columns_of(table, files)
    ]
    union = "\n    union all by name\n    ".join(parts)
    return f"select {', '.join(columns)}\nfrom (\n    {union}\n)"


def rules_select(files: list[TableFile], root: Path) -> str:
    """The select statement of the ``rules`` view (variant, game, rules as JSON) over the
    states files' ``stb.rules`` metadata."""
    paths = ", ".join(file_sql(root, f) for f in files)
    return (
        "with meta as (\n"
        "    select decode(value) as rules_by_variant\n"
        f"    from parquet_kv_metadata([{paths}])\n"
        "    where decode(key) = 'stb.rules'\n"
        ")\n"
        "select j.key as variant, j.value ->> 'game' as game, j.value as rules\n"
        "from meta, json_each(json(meta.rules_by_variant)) as j"
    )


def statements(
    tables: Mapping[str, list[TableFile]],
    root: Path,
    samples: Mapping[str, LeanSample] | None = None,
    guarded: str | None = None,
) -> list[str]:
    """``create view`` statements for every table of ``tables`` (files below ``root``), then
    the ``rules`` view when there are states; ``guarded``: a condition every view holds to
    (:func:`guard`), or fails."""
    where = f"\nwhere {guarded}" if guarded else ""
    out = [
        f"create view {ident(table)} as\n{view_select(table, files, root, samples)}{where}"
        for table, files in tables.items()
        if files and table != RULES_VIEW
    ]
    if tables.get("states"):
        rules = rules_select(tables["states"], root)
        if guarded:
            rules = f"select * from (\n{rules}\n){where}"
        out.append(f"create view {RULES_VIEW} as\n{rules}")
    return out


def guard(root: Path, database_files: Sequence[str], name: str) -> str:
    """The condition a catalog's views hold to: the database they are read from is one of
    ``database_files`` (the catalog's own path, as DuckDB lists the databases it has open, with
    symbolic links resolved), or the reader pointed them elsewhere with ``stb_data_dir``; else
    reading a view fails with one line. A copied or moved catalog (named ``name``) would
    otherwise answer from the directory it was written in, without a word."""
    files = ", ".join(literal(f) for f in database_files)
    message = (
        f"{name} holds the views of the tables in {root}, but it is not that directory's "
        f"catalog (copied or moved): run `stb-pipeline verify --fix --data-dir DIR` where it "
        f"is now, or `set variable {ROOT_VARIABLE} = 'DIR'` to read the tables in DIR"
    )
    return (
        f"(select case when getvariable({literal(ROOT_VARIABLE)}) is not null or count(*) > 0 "
        f"then true else error({literal(message)}) end\n"
        f" from duckdb_databases() where path in ({files}))"
    )


#: What reading a table that is not built says, after its name.
NOT_BUILT = "not built in this data directory: run stb-pipeline build"


def unbuilt_statements(tables: Mapping[str, list[TableFile]]) -> list[str]:
    """A view for every table of the schema that has no file yet, which fails naming it when
    read: in the `duckdb` command a query of a table not built says so, instead of DuckDB's
    "does not exist" (which reads as a wrong name)."""
    return [
        f"create view {ident(table)} as\n"
        f"select null::integer as {ident(table + '_not_built')} from range(1)\n"
        f"where error({literal(f'table {table} is {NOT_BUILT}')})"
        for table in schema.ALL_TABLES
        if not tables.get(table)
    ]
