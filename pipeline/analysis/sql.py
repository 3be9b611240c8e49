"""Running the DuckDB SQL files in `queries/` against the tables of a data directory.

Convention for every file in `queries/`: a header of `--` comment lines
(`-- name:`, `-- description:` one line, `-- inputs:`, `-- grain:`, `-- output:`, and
`-- params:` naming the DuckDB variables it reads), then one statement, usually a chain of CTEs
ending in `select * from final`. Tables are read through views named after them (`states`,
`edges`, `policy`, `moves`, ...), and parameters through `getvariable('variant')` etc., so the
same file runs here and in the `duckdb` command after `.read queries/_views.sql`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.errors import TablesMissingError, UsageError
from pipeline.store.layout import OWN_DIR, table_files

#: The query library ships inside the package (also reachable as queries/ in the source tree).
QUERIES_DIR = Path(str(resources.files("pipeline") / "queries"))


def query_path(name: str) -> Path:
    """The file of a named query (``best_opening_roll`` or ``contracts/unique_state``)."""
    path = QUERIES_DIR / f"{name}.sql"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in QUERIES_DIR.glob("*.sql") if p.stem[0] != "_"))
        raise UsageError(f"unknown query {name!r}; known queries: {known}")
    return path


def header(path: Path) -> dict[str, str]:
    """The `-- key: value` header lines of a query file."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("--"):
            break
        key, sep, value = line[2:].strip().partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def list_queries() -> list[tuple[str, str]]:
    """Every query in ``queries/`` (files starting with ``_`` are helpers) with its description."""
    return [
        (path.stem, header(path).get("description", ""))
        for path in sorted(QUERIES_DIR.glob("*.sql"))
        if not path.stem.startswith("_")
    ]


def connect(data_dir: Path, params: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table found in ``data_dir`` and the given variables."""
    con = duckdb.connect()
    con.execute("set variable data_dir = $v", {"v": str(data_dir)})
    for key, value in (params or {}).items():
        if value is not None:
            con.execute(f"set variable {key} = $v", {"v": value})
    data = Path(data_dir)
    names = {p.stem for p in [*data.glob("*.parquet"), *data.glob(f"{OWN_DIR}/*/*.parquet")]}
    for name in sorted(n for n in names if n.isidentifier()):
        # Views cannot take prepared parameters; a variable carries the files instead: the
        # shared file and the variants' own files, read as one table.
        files = [str(f) for f in table_files(data, name)]
        con.execute(f"set variable path_{name} = $v", {"v": files})
        con.execute(
            f"create view {name} as "
            f"select * from read_parquet(getvariable('path_{name}'), union_by_name = true)"
        )
    if table_files(data, "states"):
        con.execute(RULES_VIEW.replace("$path", "getvariable('path_states')"))
    return con


#: View `rules` (variant, game, rules JSON): the rule sets in states.parquet's `stb.rules`
#: metadata, so queries can pick rows by game (e.g. one-player Shut the Box) and read options.
RULES_VIEW = """
create view rules as
with meta as (
    select decode(value) as rules_by_variant
    from parquet_kv_metadata($path)
    where decode(key) = 'stb.rules'
)
select j.key as variant, j.value ->> 'game' as game, j.value as rules
from meta, json_each(json(meta.rules_by_variant)) as j
"""


def run_query(name: str, data_dir: Path, **params: Any) -> pl.DataFrame:
    """Run the query file ``queries/NAME.sql`` and return its result."""
    path = query_path(name)
    con = connect(data_dir, params)
    variant = params.get("variant")
    try:
        if variant is not None and "states" in _views(con):
            known = [r[0] for r in con.sql("select distinct variant from states").fetchall()]
            if variant not in known:
                raise UsageError(
                    f"variant {variant!r} is not built in {data_dir}; "
                    f"built: {', '.join(sorted(known))}"
                )
        return con.sql(path.read_text()).pl()
    except duckdb.CatalogException as exc:
        first = str(exc).splitlines()[0]
        raise TablesMissingError(
            f"query {name}: a table it reads is not built in {data_dir} ({first}); "
            "run `stb-pipeline build` first"
        ) from None
    finally:
        con.close()


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the views (tables found) of a connection."""
    return {
        row[0]
        for row in con.sql("select view_name from duckdb_views() where not internal").fetchall()
    }
