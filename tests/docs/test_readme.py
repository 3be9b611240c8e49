"""The README and docs/*.md stay true: every command, table, column, query and example they show
exists or runs, and the README's tour runs as written.

In the manner of sqlite-utils' docs tests: documentation that names something that does not exist
(or forgets a command that does) fails the build.
"""

from __future__ import annotations

import dataclasses
import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
import typer.main

import pipeline
from pipeline.analysis import sql
from pipeline.analysis.schema_docs import TABLES
from pipeline.cli.app import app
from pipeline.errors import PipelineError
from pipeline.games.base import Game
from pipeline.games.registry import REGISTRY, Variant
from pipeline.games.rule_options import CUSTOM_RULE_OPTIONS, variant_from_options
from pipeline.store import catalog, views
from tests.conftest import REPO, invoke

README = (REPO / "README.md").read_text()
#: Every page checked: the README and the reference pages under docs/.
PAGES = {"README.md": README} | {
    f"docs/{p.name}": p.read_text() for p in sorted((REPO / "docs").glob("*.md"))
}
ALL_TEXT = "\n".join(PAGES.values())
#: Backticked words in the pages that name none of the things checked below (`datasets` is a
#: library, `file_search_path` a DuckDB setting).
PLAIN_WORDS = {"all", "duckdb", "pipeline", "q", "family", "graph", "rules", "make", "variants"}
PLAIN_WORDS |= {"datasets", "file_search_path"}
#: The README's opening commands: install and build, install and test (the test one is .ci/run's).
OPENING = [
    "pip install . && stb-pipeline build --variant all",
    "pip install '.[test,distributed]' && python -m pytest",
]


def code_spans(text: str = ALL_TEXT) -> list[str]:
    """Inline code spans and the lines of fenced code blocks."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [line for block in blocks for line in block.splitlines()] + inline


def commands() -> set[str]:
    """The names of every `stb-pipeline` command."""
    group = typer.main.get_command(app)
    return set(group.commands)  # type: ignore[attr-defined]


def subcommands() -> set[str]:
    """The names of the commands inside command groups (`knucklebones tree`, ...)."""
    group = typer.main.get_command(app)
    return {
        name
        for sub in group.commands.values()  # type: ignore[attr-defined]
        for name in getattr(sub, "commands", {})
    }


def test_every_command_in_the_readme_exists_and_every_command_is_documented() -> None:
    named = {m for span in code_spans() for m in re.findall(r"stb-pipeline ([a-z][a-z-]*)", span)}
    assert named, "the pages show commands"
    assert named <= commands(), f"the docs name unknown commands {sorted(named - commands())}"
    undocumented = commands() - named
    assert not undocumented, f"commands missing from README.md and docs/: {sorted(undocumented)}"


def test_the_readme_opens_with_install_and_test_and_stays_short() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert [b.strip() for b in blocks[:2]] == OPENING
    ci = (REPO / ".ci" / "run").read_text()
    assert OPENING[1] in ci, "the README's test command is the one .ci/run runs"
    assert len(README.splitlines()) <= 250
    opening = " ".join(README.split("## What it is")[0].split())
    assert re.search(r"test suite.*: about \d+ minutes", opening), "say what the suite costs"
    assert "seed 0" not in README.lower(), "say what a source is, not its seed number"
    for page in ("commands", "variants", "tables", "benchmarks", "architecture"):
        assert f"(docs/{page}.md)" in README, f"the README links docs/{page}.md"


def test_every_query_in_the_readme_exists() -> None:
    known = {name for name, _ in sql.list_queries()}
    known |= {p.stem for p in sql.QUERIES_DIR.glob("_*.sql")}  # the helpers a query uses
    named = set(re.findall(r"queries/([a-z_0-9]+)\.sql", ALL_TEXT))
    named |= {m for span in code_spans() for m in re.findall(r"query ([a-z_0-9]+)", span)}
    assert named <= known, f"README names unknown queries {sorted(named - known)}"


@pytest.fixture(scope="module")
def names_in_a_build(built: Path) -> tuple[dict[str, set[str]], set[str]]:
    """The session build's tables (name -> columns) and every name the pages may use: the same
    for every page, so gathered once for them all (reading every table whole and running every
    query took about 12 s a page)."""
    columns = {p.stem: set(pq.read_schema(p).names) for p in built.glob("*.parquet")}
    all_columns = set().union(*columns.values())
    api_names = set(pipeline.__all__)
    # and their parameters (`data_dir`)
    api_names |= {p for n in api_names - {"__version__"} for p in api_parameters(n)}
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
        | subcommands()
        | {name for name in dir(Game) if not name.startswith("_")}  # the hooks a game defines
        | {f.name for f in dataclasses.fields(Variant)}  # what a family declares of a variant
        | api_names
        | params
        | {catalog.INFO_VIEW, views.ROOT_VARIABLE}  # the catalog's view and variable
        | PLAIN_WORDS
    )
    return columns, known


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_table_and_column_named_exists_in_a_build(
    names_in_a_build: tuple[dict[str, set[str]], set[str]], page: str
) -> None:
    text = PAGES[page]
    columns, known = names_in_a_build
    for table in set(re.findall(r"`([a-z_]+)\.parquet`", text)):
        # Tables written by commands other than `build` must at least be documented.
        assert table in columns or table in TABLES, f"README names table {table}.parquet"
    words = {w for w in re.findall(r"`([^`\n]+)`", text) if re.fullmatch(r"[a-z][a-z0-9_]*", w)}
    unknown = words - known
    assert not unknown, f"{page} names columns or things that do not exist: {sorted(unknown)}"


def api_parameters(name: str) -> list[str]:
    """The parameter names of an API function."""
    import inspect

    return list(inspect.signature(getattr(pipeline, name)).parameters)


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


def test_the_python_examples_run(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STB_DATA_DIR", str(built))
    blocks = re.findall(r"```python\n(.*?)```", ALL_TEXT, flags=re.S)
    assert blocks, "the pages have Python examples"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README python block {i}", "README.md", 0)
        assert test.examples, "write the example as >>> lines with their output"
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 5


def test_the_api_module_docstring_example_runs(built: Path, monkeypatch) -> None:
    from pipeline import api  # the package loads it lazily: not an attribute before first use

    monkeypatch.setenv("STB_DATA_DIR", str(built))
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 3


def tour_commands() -> list[str]:
    """The README's shell commands after the two opening ones (install lines excluded)."""
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)[2:]
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    """Each tour command runs in a fresh directory, `stb-pipeline` being this checkout's CLI, and
    writes nowhere but data/ there."""
    shim = tmp_path / "bin" / "stb-pipeline"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pipeline "$@"\n')
    shim.chmod(0o755)
    duckdb = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    env = {
        **os.environ,
        "PATH": f"{shim.parent}:{Path(duckdb).parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "STB_QUIET": "1",
    }
    env.pop("STB_DATA_DIR", None)
    work = tmp_path / "work"
    work.mkdir()
    commands = tour_commands()
    assert len(commands) >= 10
    for line in commands:
        done = subprocess.run(
            ["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        expected = re.search(r"#\s*([0-9.]+)\s*$", line)
        if expected:  # a comment giving the exact answer is checked too
            assert expected.group(1) in done.stdout, f"{line}: {done.stdout}"
    assert {p.name for p in work.iterdir()} == {"data"}, "the tour writes only into data/"


def test_the_readme_says_what_was_not_run_on_the_full_game() -> None:
    """Issue 41: the README said the full game's queries were not run, not that the tables'
    check, lookup and `verify` were not either (docs/knucklebones-full-game.md lists them)."""
    text = " ".join((REPO / "README.md").read_text().split())
    said = text[text.index("Not yet run on the full game") :][:400]
    for step in ("these queries", "knucklebones check-tables", "knucklebones solve", "`verify`"):
        assert step in said, step
    page = " ".join((REPO / "docs" / "knucklebones-full-game.md").read_text().split())
    listed = page[page.index("Not yet run on the full game") :][:600]
    assert "`verify`" in listed and "check-tables" in listed


def test_the_readme_says_how_to_read_the_knucklebones_example(built: Path) -> None:
    """Issue 41: the README showed `44_/1__/___` and "win 0.7931 ... (estimate)" unexplained;
    what it quotes is what the command prints."""
    text = " ".join(README.split())
    said = text[text.index("stb-pipeline knucklebones solve 44_/1__/___") :][:1600]
    for words in ("separated by `/`", "`_` for an empty slot", "17 points", "(a draw counts 1/2)"):
        assert words in said, words
    quoted = re.search(
        r"`(best column \d: win [\d.]+ +score difference [+\d.]+ +\(estimate\))`", said
    )
    assert quoted is not None
    run = invoke(
        ["knucklebones", "solve", "44_/1__/___", "2__/___/___", "4", "--depth", "4", "-d", built]
    )
    assert run.code == 0, run.stderr
    assert " ".join(quoted.group(1).split()) in " ".join(run.stdout.split())
    assert "scores 17 - 2" in run.stdout
    # issue 48: the default answer (serve's) differs, and the README says which and why
    default = re.search(r"Without `--depth`.*?`(best column \d: win [\d.]+ .*?\(estimate\))`", said)
    assert default is not None and "only the tables settle it" in said
    run = invoke(["knucklebones", "solve", "44_/1__/___", "2__/___/___", "4", "-d", built])
    assert run.code == 0, run.stderr
    assert " ".join(default.group(1).split()) in " ".join(run.stdout.split())


def _rule_options(words: list[str]) -> dict[str, Any] | None:
    """The custom rule options of a command's words (None: a placeholder such as ``--tiles N``,
    not a command to run)."""
    found: dict[str, Any] = dict.fromkeys(CUSTOM_RULE_OPTIONS)
    for flag, value in zip(words, [*words[1:], ""], strict=True):
        name = flag.removeprefix("--").replace("-", "_")
        if flag.startswith("--") and name in CUSTOM_RULE_OPTIONS:
            try:
                found[name] = CUSTOM_RULE_OPTIONS[name].kind(value)
            except ValueError:
                return None
    return found


def test_every_custom_rule_set_the_pages_name_is_one_that_builds() -> None:
    """Issue 48: the README's `build --tiles 20 --dice 3` (and docs/benchmarks.md's 24 x 3) failed
    as written, P(shut) being 0 there: every `--tiles ...` the pages show, in a code block or
    inline (across a line break too), is a rule set `build` accepts."""
    checked = 0
    for name, text in PAGES.items():
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
        lines = [line for block in blocks for line in block.splitlines()]
        inline = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
        for span in [*lines, *inline]:
            if not re.search(r"--tiles\s", span):
                continue
            options = _rule_options(span.split())
            if options is None:
                continue
            try:
                variant_from_options(options)
            except PipelineError as exc:
                raise AssertionError(f"{name}: `{' '.join(span.split())}`: {exc}") from None
            checked += 1
    assert checked > 20
