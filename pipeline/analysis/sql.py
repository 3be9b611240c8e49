"""Running the DuckDB SQL files of the query library against the tables of a data directory.

The library ships inside the package (``pipeline/queries/``, also ``queries/`` at the top of the
source tree) and is read with :mod:`importlib.resources`, so an installed wheel has it too. A
query is named by its file's stem (``best_opening_roll``); names are never paths.

Header convention, for every file in ``queries/`` and ``queries/contracts/``: `--` comment lines
before the first statement:

- ``-- name: NAME`` (the stem; ``contracts/NAME`` for a contract),
- ``-- description:`` one line, ``-- inputs:`` the tables read, ``-- grain:`` what one row is,
  ``-- output:`` the columns,
- one ``-- param:`` line per DuckDB variable the query reads (through ``getvariable('NAME')``)::

      -- param: NAME TYPE [LOW..HIGH | one of A,B,C] (default VALUE | optional)

  TYPE is ``int``, ``float``, ``text`` or ``variant`` (a variant name with rows in the tables).
  ``LOW..HIGH`` bounds a number (inclusive); ``one of`` lists the allowed texts (commas, no
  spaces). ``default VALUE`` is what the SQL uses when the variable is unset (its
  ``coalesce(getvariable('NAME'), VALUE)``); ``optional`` means unset reads every variant's
  rows. For example::

      -- param: variant variant default classic
      -- param: strategy text one of optimal,random,greedy default greedy
      -- param: top int 1..10000 default 10

- optionally ``-- built by:`` the command that builds what the query reads, when plain
  ``stb-pipeline build`` does not (a missing table's error then names it), and ``-- needs rows
  in:`` a table that must hold rows of the variant asked for (`build` fills it for some
  variants only; the error then names that command with ``--variant``).
- optionally ``-- shows: COLUMN, ... (COLUMN folds)``: the columns `stb-pipeline query` draws
  as its table (a card a person reads; ``-f csv`` and ``-o`` give every column), the one named
  last folding onto more lines to fit the terminal.
- optionally ``-- uses: _HELPER, ...``: helper files of the library (their names start with
  ``_``; they are no queries) that create views the query reads, run first: a chain of CTEs
  two queries share is written once (in the duckdb command, ``.read`` the helper first).
- optionally ``-- families:`` the game families the query is about (names of
  :data:`pipeline.games.registry.FAMILIES`, commas), and ``-- players: N`` when it is about
  games of exactly N players: a variant given to it that is of another family (or another
  number of players) is refused with one line, instead of a header over no rows.

Then one statement, usually a chain of CTEs ending in ``select * from final``. Tables are read
through views named after them (``states``, ``edges``, ``policy``, ...; one definition, in
:mod:`pipeline.store.views`), so the same file runs here and in the ``duckdb`` command on the
catalog: ``duckdb -readonly data/stb.duckdb -c ".read queries/NAME.sql"``.

Values given by the user are checked against the declared type and range (a one-line
UsageError otherwise), and reach DuckDB only as bound parameters, never as SQL text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.errors import TableError, TablesMissingError, UsageError, first_line
from pipeline.store import manifest, sources, views
from pipeline.store.layout import settle
from pipeline.store.sources import LeanSample, lean_sample

if TYPE_CHECKING:  # polars loads for a result as a frame (run_query), not for query_arrow
    import polars as pl
    import pyarrow as pa

#: The query library inside the installed package (a Path when installed as plain files).
QUERIES_DIR: Traversable = resources.files("pipeline").joinpath("queries")
#: What a query name may look like: a file stem, never a path.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
_PARAM_LINE = re.compile(
    r"(?P<name>[a-z][a-z0-9_]*) (?P<kind>int|float|text|variant)"
    r"(?: (?P<low>-?[0-9.]+)\.\.(?P<high>-?[0-9.]+)| one of (?P<choices>\S+))?"
    r" (?:default (?P<default>\S+)|(?P<optional>optional))"
)
#: Integers past this many digits are refused before they reach DuckDB (INT64 holds 18).
MAX_INT_DIGITS = 18


@dataclass(frozen=True)
class Param:
    """One declared query variable: its name, type, allowed values and default."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None

    def describe(self) -> str:
        """How the allowed values are written in an error message."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.low is not None and self.high is not None:
            if self.kind == "int":
                return f"an integer from {int(self.low):,} to {int(self.high):,}"
            return f"a number from {self.low:g} to {self.high:g}"
        return "a variant name" if self.kind == "variant" else self.kind


def query_file(name: str) -> Traversable:
    """The file of a library query (``best_opening_roll``); UsageError for anything else, with
    the names it most likely meant."""
    known = [q for q, _ in list_queries()]
    lower = name.lower() if isinstance(name, str) else ""
    if lower != name and lower in known:  # STRATEGY_CARD
        raise UsageError(f"unknown query {name!r}; did you mean {lower}?")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise UsageError(
            f"query {name!r} is not a query name (names are words such as best_opening_roll; "
            "stb-pipeline query --list shows them)"
        )
    if not known:
        raise UsageError(f"no query files in {QUERIES_DIR}: the installation is incomplete")
    if name not in known:
        import difflib

        # a name that starts one, or is near one (a typo), is most likely that one
        close = [q for q in known if q.startswith(name.lower())][:3]
        close = close or difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.6)
        if close:
            raise UsageError(
                f"unknown query {name!r}; did you mean {' or '.join(close)}? "
                "(stb-pipeline query --list shows them)"
            )
        raise UsageError(f"unknown query {name!r}; known queries: {', '.join(known)}")
    return QUERIES_DIR.joinpath(f"{name}.sql")


def read_sql(path: Traversable | Path) -> str:
    """A query file's text; UsageError naming the file when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read query file {path}: {exc}") from None


def header(path: Traversable | Path) -> dict[str, str]:
    """The `-- key: value` header lines of a query file (``param`` lines: see :func:`params`)."""
    return {key: value for key, value in _header_lines(path) if key != "param"}


def params(path: Traversable | Path) -> dict[str, Param]:
    """The variables a query file declares, by name; UsageError on a malformed declaration."""
    found = [parse_param(value) for key, value in _header_lines(path) if key == "param"]
    return {param.name: param for param in found}


def parse_param(text: str) -> Param:
    """One ``-- param:`` declaration (see the module docstring for the syntax)."""
    m = _PARAM_LINE.fullmatch(text.strip())
    if m is None:
        raise UsageError(f"malformed query header line '-- param: {text}'")
    low, high = m["low"], m["high"]
    return Param(
        name=m["name"],
        kind=m["kind"],
        low=None if low is None else float(low),
        high=None if high is None else float(high),
        choices=tuple(m["choices"].split(",")) if m["choices"] else (),
        default=m["default"],
    )


def _header_lines(path: Traversable | Path) -> list[tuple[str, str]]:
    """(key, value) of each header comment line, in order."""
    out: list[tuple[str, str]] = []
    for line in read_sql(path).splitlines():
        if not line.startswith("--"):
            break
        key, sep, value = line[2:].strip().partition(":")
        if sep:
            out.append((key.strip(), value.strip()))
    return out


def helpers(path: Traversable | Path) -> list[Traversable]:
    """The helper files a query's ``-- uses:`` line names (each creates a view it reads)."""
    names = [n.strip() for n in header(path).get("uses", "").split(",") if n.strip()]
    for name in names:
        if not (name.startswith("_") and NAME_PATTERN.fullmatch(name[1:])):
            raise UsageError(f"{path}: '-- uses: {name}' is not a helper's name (_name)")
    return [QUERIES_DIR.joinpath(f"{name}.sql") for name in names]


def list_queries() -> list[tuple[str, str]]:
    """Every library query (files starting with ``_`` are helpers) with its description."""
    try:
        files = sorted(QUERIES_DIR.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [
        (p.name[:-4], header(p).get("description", ""))
        for p in files
        if p.name.endswith(".sql") and not p.name.startswith("_") and p.is_file()
    ]


def bind(declared: dict[str, Param], given: dict[str, Any], query: str) -> dict[str, Any]:
    """The given values checked against the declarations and converted to their types.

    None means "not given". UsageError for an undeclared name or a value of the wrong type or
    out of range.
    """
    out: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        param = declared.get(key)
        if param is None:
            known = ", ".join(declared) or "none"
            raise UsageError(f"query {query} has no parameter {key!r}; its parameters: {known}")
        out[key] = convert(param, value)
    return out


def convert(param: Param, value: Any) -> Any:
    """A value (text from the command line, or a Python value) as the parameter's type."""
    bad = UsageError(f"parameter {param.name} must be {param.describe()}, not {value!r}")
    if param.kind == "int":
        text = str(value).strip()
        if isinstance(value, bool) or not re.fullmatch(rf"-?\d{{1,{MAX_INT_DIGITS}}}", text):
            raise bad
        number: int | float = int(text)
    elif param.kind == "float":
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            raise bad from None
        if not math.isfinite(number):
            raise bad
    else:
        if not isinstance(value, str) or not value or "\n" in value:
            raise bad
        if param.choices and value not in param.choices:
            raise bad
        return value
    high = math.inf if param.high is None else param.high
    if param.low is not None and not param.low <= number <= high:
        raise bad
    return number


def connect(
    data_dir: Path, values: dict[str, Any] | None = None, lean_groups: int | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table found in ``data_dir`` and the given variables.

    The views are the catalog's (:mod:`pipeline.store.views`: every variant's files read as one
    table), defined here again rather than read from ``stb.duckdb``, which another process may
    hold open. Variable names come from query headers (checked words); values are bound
    parameters. With ``lean_groups``, a lean file (billions of rows: the full Knucklebones
    game's states) is read through ``lean_groups`` of its row groups (:func:`lean_sample`), as
    `verify` does.
    """
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")  # DuckDB's bar would clutter stderr
    for key, value in (values or {}).items():
        if value is not None:
            if not NAME_PATTERN.fullmatch(key):
                raise UsageError(f"{key!r} is not a parameter name")
            con.execute(f"set variable {key} = $v", {"v": value})
    root = Path(data_dir).resolve()
    found = sources.files_of(root)  # a data directory, or an exported dataset
    samples: dict[str, LeanSample] = {}
    for f in (f for files in found.values() for f in files if f.lean and lean_groups):
        sample = lean_sample(root / f.relative, lean_groups or 0)
        if sample is not None:
            samples[f.relative] = sample
    for statement in views.statements(found, root, samples):
        con.execute(statement)
    return con


def run_query(name: str, data_dir: Path, /, **given: Any) -> pl.DataFrame:
    """Run the library query ``NAME`` with the given parameters and return its result.

    ``name`` and ``data_dir`` are positional only: a parameter of those names given by the user
    (``--param data_dir=...``) is one the query does not declare, refused as such."""
    return _run(name, data_dir, given, lambda rows: rows.pl())


def query_arrow(name: str, data_dir: Path, /, **given: Any) -> pa.Table:
    """:func:`run_query`'s result as an Arrow table: DuckDB and pyarrow alone, no polars (a
    GPU machine brings DuckDB for the full game's queries, not polars)."""
    return _run(name, data_dir, given, _arrow_table)


def _arrow_table(rows: duckdb.DuckDBPyRelation) -> pa.Table:
    """A relation's rows as one Arrow table (``to_arrow_table`` from DuckDB 1.4 on)."""
    fetch = getattr(rows, "to_arrow_table", None) or rows.fetch_arrow_table
    return fetch()


def _run(name: str, data_dir: Path, given: dict[str, Any], fetch: Any) -> Any:
    """Run the library query ``name`` and hand its relation to ``fetch``."""
    path = query_file(name)
    declared = params(path)
    values = bind(declared, given, name)
    settle(data_dir)  # a commit cut short is finished, a killed build's temporary files go
    con = connect(data_dir, values)
    try:
        # the variant asked, else the one the query reads by default (`-- param: variant
        # variant default classic`): checked alike, so that no query answers with nothing
        fallback = declared["variant"].default if "variant" in declared else None
        variant = values.get("variant", fallback)
        if variant is not None:
            check_built(con, data_dir, variant)
            check_game(con, path, name, variant)
            check_rows(con, path, variant, values)
        for helper in helpers(path):
            con.execute(read_sql(helper))
        return fetch(con.sql(read_sql(path)))
    except duckdb.CatalogException as exc:
        # DuckDB's "Catalog Error: Table with name policy does not exist!" said in our words
        missing = re.search(r"with name (\w+) does not exist", str(exc))
        what = f"reads {missing.group(1)}, which is" if missing else "reads a table"
        command = build_hint(path, values.get("variant"))
        raise TablesMissingError(
            f"query {name} {what} not built in {data_dir}; run `{command}` first"
        ) from None
    except duckdb.Error as exc:
        raise damaged(data_dir, exc) from None
    finally:
        con.close()


def check_built(con: duckdb.DuckDBPyConnection, data_dir: Path, variant: str) -> None:
    """UsageError unless ``variant`` has rows in the states table (when there is one)."""
    if "states" not in _views(con):
        return
    known = [r[0] for r in con.sql("select distinct variant from states").fetchall()]
    if variant not in known:
        raise UsageError(
            f"variant {variant!r} is not built in {data_dir}; built: {', '.join(sorted(known))}"
        )


def shown(name: str) -> tuple[list[str], tuple[str, ...]]:
    """The columns a query's table shows and those that fold onto more lines on a narrow
    terminal (its ``-- shows:`` header line, e.g. ``(line and rule fold)``; none: every
    column)."""
    text = header(query_file(name)).get("shows", "")
    fold = re.search(r"\(([\w ,]+?) folds?\)", text)
    folding = tuple(re.split(r"\s*,\s*|\s+and\s+", fold.group(1))) if fold else ()
    columns = [c.strip() for c in re.sub(r"\(.*?\)", "", text).split(",") if c.strip()]
    return columns, folding


def applies_to(path: Traversable | Path) -> tuple[tuple[str, ...], int | None]:
    """The game families a query declares it is about (empty: any) and the number of players
    (None: any), from its ``-- families:`` and ``-- players:`` header lines."""
    head = header(path)
    families = tuple(f.strip() for f in head.get("families", "").split(",") if f.strip())
    players = head.get("players")
    if players is not None and not players.isdigit():
        raise UsageError(f"malformed query header line '-- players: {players}' in {path}")
    return families, None if players is None else int(players)


def check_game(
    con: duckdb.DuckDBPyConnection, path: Traversable | Path, query: str, variant: str
) -> None:
    """UsageError when ``variant`` is not a game the query is about (see :func:`applies_to`):
    such a query would print its header over no rows, or rows that mean nothing."""
    import json

    from pipeline.games.registry import REGISTRY, variant_from_rules

    families, players = applies_to(path)
    if (not families and players is None) or "states" not in _views(con):
        return
    found = con.execute(
        "select rules from rules where variant = $v limit 1", {"v": variant}
    ).fetchall()
    if not found:
        return  # not in the states table: check_built has said so where it matters
    rules = json.loads(found[0][0])
    game = REGISTRY.get(variant) or variant_from_rules(variant, rules)
    family = game.family if game is not None else str(rules.get("game"))
    count = rules.get("players")  # only the games of several players in turn record it
    if (not families or family in families) and (players is None or count == players):
        return
    wanted = "games" if players is None else f"games of {players} players"
    if families:
        wanted += f" of the {' or '.join(families)} family"
        if players is None:  # every registered variant of the family is one of them
            examples = sorted(n for n, v in REGISTRY.items() if v.family in families)[:4]
            wanted += f" ({', '.join(examples)}, ...)"
    who = f"a game of the {family} family" + ("" if count is None else f" for {count} players")
    raise UsageError(f"query {query} is about {wanted}; {variant} is {who}")


def check_rows(
    con: duckdb.DuckDBPyConnection,
    path: Traversable | Path,
    variant: str,
    values: dict[str, Any] | None = None,
) -> None:
    """TablesMissingError unless ``variant`` has rows in the table a query's ``-- needs rows
    in:`` line names (a table that `build` fills for some variants only), naming the command
    that builds them (its ``-- built by:`` line); UsageError when it has rows, but none for the
    other ``values`` given that are columns of that table (``objective=target`` where the
    variant was searched for shut and score only), naming the values it has."""
    table = header(path).get("needs rows in")
    if table is None or table not in _views(con):
        return  # a table not built at all is reported when the query reads it
    query = f"select count(*) from {table} where variant = $v"
    [(rows,)] = con.execute(query, {"v": variant}).fetchall()
    if not rows:
        raise TablesMissingError(
            f"variant {variant!r} has no rows in {table}: `{build_hint(path, variant)}` writes "
            "them, for the variants it applies to"
        )
    columns = {r[0] for r in con.execute(f"describe {table}").fetchall()}
    for key, value in (values or {}).items():
        if key == "variant" or key not in columns or not NAME_PATTERN.fullmatch(key):
            continue
        found = con.execute(
            f"select distinct {key}::varchar from {table} where variant = $v order by 1",
            {"v": variant},
        ).fetchall()
        held = [str(r[0]) for r in found if r[0] is not None]
        if str(value) not in held:
            raise UsageError(
                f"{table} has no rows of {variant} for {key} {value!r} "
                f"(it has {key} {', '.join(held) or 'none'})"
            )


def build_hint(path: Traversable | Path, variant: str | None) -> str:
    """The command that builds what a query reads: its ``-- built by:`` line (plain `build` by
    default), with ``--variant`` where the query needs the variant's rows in a table that
    `build` fills for some variants only (``-- needs rows in:``)."""
    found = header(path)
    command = found.get("built by", "stb-pipeline build")
    if variant is not None and "needs rows in" in found:
        command += f" --variant {variant}"
    return command


def damaged(data_dir: Path, exc: BaseException) -> TableError:
    """The one-line error for a table DuckDB could not read (named when DuckDB names it)."""
    first = first_line(exc)
    named = re.search(r"([^\s\"']+\.parquet)", first)
    where = named.group(1) if named else f"a table in {data_dir}"
    return TableError(
        f"{where} is not a readable table of ours ({first[:160]}); {manifest.REBUILD}"
    )


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the views (tables found) of a connection."""
    return {
        row[0]
        for row in con.sql("select view_name from duckdb_views() where not internal").fetchall()
    }
