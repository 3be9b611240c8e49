"""The README stays true: every command, table, column, query and example it shows exists/runs.

In the manner of sqlite-utils' docs tests: documentation that names something that does not exist
(or forgets a command that does) fails the build.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import typer.main

import pipeline
from pipeline.analysis import sql
from pipeline.analysis.schema_docs import TABLES
from pipeline.cli.app import app
from pipeline.errors import PipelineError
from pipeline.games.registry import REGISTRY

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
#: Backticked words in the README that name none of the things checked below.
PLAIN_WORDS = {"all", "duckdb", "pipeline", "q"}


def code_spans() -> list[str]:
    """Inline code spans and the lines of fenced code blocks."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", README, flags=re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", README, flags=re.S))
    return [line for block in blocks for line in block.splitlines()] + inline


def commands() -> set[str]:
    """The names of every `stb-pipeline` command."""
    group = typer.main.get_command(app)
    return set(group.commands)  # type: ignore[attr-defined]


def test_every_command_in_the_readme_exists_and_every_command_is_documented() -> None:
    named = {m for span in code_spans() for m in re.findall(r"stb-pipeline ([a-z][a-z-]*)", span)}
    assert named, "the README shows commands"
    assert named <= commands(), f"README names unknown commands {sorted(named - commands())}"
    undocumented = commands() - named
    assert not undocumented, f"commands missing from the README: {sorted(undocumented)}"


def test_every_query_in_the_readme_exists() -> None:
    known = {name for name, _ in sql.list_queries()}
    named = set(re.findall(r"queries/([a-z_0-9]+)\.sql", README)) - {"_views"}
    named |= {m for span in code_spans() for m in re.findall(r"query ([a-z_0-9]+)", span)}
    assert named <= known, f"README names unknown queries {sorted(named - known)}"
    assert (REPO / "queries" / "_views.sql").exists()


def test_every_table_and_column_in_the_readme_exists_in_a_build(built: Path) -> None:
    columns = {p.stem: set(pq.read_schema(p).names) for p in built.glob("*.parquet")}
    for table in set(re.findall(r"`([a-z_]+)\.parquet`", README)):
        # Tables written by commands other than `build` must at least be documented.
        assert table in columns or table in TABLES, f"README names table {table}.parquet"
    all_columns = set().union(*columns.values())
    api_names = set(pipeline.__all__)
    params = {name for path in sql.QUERIES_DIR.glob("*.sql") for name in sql.params(path)}
    known = (
        all_columns
        | category_values(built)
        | documented_words()
        | query_columns(built)
        | set(columns)
        | set(TABLES)
        | set(REGISTRY)
        | {name for name, _ in sql.list_queries()}
        | commands()
        | api_names
        | params
        | PLAIN_WORDS
    )
    words = {w for w in re.findall(r"`([^`\n]+)`", README) if re.fullmatch(r"[a-z][a-z0-9_]*", w)}
    unknown = words - known
    assert not unknown, f"README names columns or things that do not exist: {sorted(unknown)}"
    assert {"variant", "state_id", "tiles"} <= words & all_columns


def category_values(built: Path) -> set[str]:
    """Values of the built tables' text columns with few values (strategy, method, objective...),
    which the README may name too."""
    out: set[str] = set()
    for path in built.glob("*.parquet"):
        frame = pl.read_parquet(path)
        for name, dtype in frame.schema.items():
            if dtype == pl.String and name != "variant":
                values = frame[name].drop_nulls().unique()
                if values.len() <= 50:
                    out |= set(values.to_list())
    return out


def documented_words() -> set[str]:
    """Words of the column descriptions in schema_docs: the documented vocabulary of values
    (such as method `simulation`, written only by `stb-pipeline benchmark`)."""
    text = " ".join(d for _, cols in TABLES.values() for d in cols.values())
    return set(re.findall(r"[a-z][a-z0-9_]*", text))


def query_columns(built: Path) -> set[str]:
    """Output columns of every query that runs on this build (with its default variant)."""
    out: set[str] = set()
    for name, _ in sql.list_queries():
        try:
            out |= set(sql.run_query(name, built).columns)
        except PipelineError:  # reads a table `build` does not write
            continue
    return out


def test_the_readme_python_example_runs(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STB_DATA_DIR", str(built))
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "the README has a Python example"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README python block {i}", "README.md", 0)
        assert test.examples, "write the example as >>> lines with their output"
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 5


def test_the_api_module_docstring_example_runs(built: Path, monkeypatch) -> None:
    monkeypatch.setenv("STB_DATA_DIR", str(built))
    result = doctest.testmod(pipeline.api, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 3
