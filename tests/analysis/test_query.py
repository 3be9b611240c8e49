"""The query library: headers, `stb-pipeline query`, expected answers, and the duckdb recipe."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.analysis import sql
from pipeline.errors import PipelineError
from pipeline.store import outputs
from tests.conftest import REPO
from tests.games.shutbox.test_shutbox_values import SEED_000_OPENING

EXPECTED = REPO / "tests" / "analysis" / "expected"
HEADER_KEYS = ("name", "description", "inputs", "grain", "output")
QUERY_FILES = sorted(p for p in sql.QUERIES_DIR.glob("*.sql") if not p.stem.startswith("_"))


def close(a: float, b: float) -> bool:
    """Floats equal to 1e-12, relative (absolute near 0)."""
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def assert_same_rows(got: list[dict[str, str]], want: list[dict[str, str]], what: str) -> None:
    """Rows of two CSV files equal: floats within 1e-12, everything else as text."""
    assert len(got) == len(want), f"{what}: {len(got)} rows, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert list(g) == list(w), f"{what}: columns {list(g)}, expected {list(w)}"
        for key in w:
            if {g[key], w[key]} <= {"", "NULL"}:  # duckdb writes nulls as NULL, polars as ""
                continue
            try:
                ok = close(float(g[key]), float(w[key]))
            except ValueError:  # not numbers: tiles, moves as text
                ok = g[key] == w[key]
            assert ok, f"{what} row {i} {key}: {g[key]!r}, expected {w[key]!r}"


def canonical(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Rows sorted by their values (numbers rounded to 9 significant digits, nulls empty)."""

    def key(row: dict[str, str]) -> tuple:
        out = []
        for value in row.values():
            value = "" if value == "NULL" else value
            try:
                out.append((0, float(f"{float(value):.9g}"), ""))
            except ValueError:
                out.append((1, 0.0, value))
        return tuple(out)

    return sorted(rows, key=key)


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_every_query_has_a_complete_header(path: Path) -> None:
    head = sql.header(path)
    missing = [k for k in HEADER_KEYS if not head.get(k)]
    assert not missing, f"{path.name}: header lacks {missing}"
    assert head["name"] == path.stem
    assert "select * from final" in path.read_text().lower(), "end the CTE chain with final"


ALL_SQL = sorted([*QUERY_FILES, *sql.QUERIES_DIR.glob("contracts/*.sql")])


@pytest.mark.parametrize("path", ALL_SQL, ids=lambda p: p.stem)
def test_every_variable_a_query_reads_is_declared_with_its_default(path: Path) -> None:
    text = path.read_text()
    declared = sql.params(path)
    read = set(re.findall(r"getvariable\('([a-z_]+)'\)", text))
    assert read == set(declared), f"{path.name}: reads {sorted(read)}, declares {sorted(declared)}"
    for param in declared.values():
        if param.default is None:
            continue  # optional: unset reads every variant
        literal = param.default if param.kind == "int" else f"'{param.default}'"
        assert f"coalesce(getvariable('{param.name}'), {literal})" in text, param


def test_strategy_parameter_lists_every_strategy() -> None:
    from pipeline.games.shutbox.names import STRATEGY_NAMES

    param = sql.params(sql.QUERIES_DIR / "strategy_mistakes.sql")["strategy"]
    assert param.choices == STRATEGY_NAMES


def test_list_names_every_query_with_its_description(cli) -> None:
    result = cli(["query", "--list"])
    assert result.code == 0, result.stderr
    flat = " ".join(result.stdout.split())
    for path in QUERY_FILES:
        assert path.stem in result.stdout
        first_words = " ".join(sql.header(path)["description"].split()[:3])
        assert first_words in flat, f"{path.stem}'s description is not listed"
    assert "_views" not in result.stdout


def test_best_opening_roll_matches_seed_000(built: Path) -> None:
    # Seed 000_9b8fddd618491a4c.txt: "(9,0.10150185360563307) (8,0.0843992883264558) ..."
    published = SEED_000_OPENING
    frame = sql.run_query("best_opening_roll", built, variant="classic")
    assert frame["roll"].to_list() == list(published), "rolls in the seed's order"
    for roll, value in zip(frame["roll"], frame["value_after"], strict=True):
        assert close(value, published[roll]), (roll, value)


EXPECTED_FILES = sorted(EXPECTED.glob("*__*.csv"))


@pytest.mark.parametrize("path", EXPECTED_FILES, ids=lambda p: p.stem)
def test_query_gives_the_checked_in_answer(built: Path, path: Path) -> None:
    name, variant = path.stem.split("__")
    got = outputs.to_csv(sql.run_query(name, built, variant=variant))
    assert_same_rows(csv_rows(got), csv_rows(path.read_text()), path.name)


def test_arrow_results_are_the_frames(built: Path) -> None:
    """query_arrow (DuckDB and Arrow alone, for machines without polars) gives every checked-in
    answer as run_query does: the same rows, list columns as the same text."""
    for path in EXPECTED_FILES:
        name, variant = path.stem.split("__")
        got = outputs.arrow_to_csv(sql.query_arrow(name, built, variant=variant))
        assert_same_rows(csv_rows(got), csv_rows(path.read_text()), f"{path.name} (Arrow)")


def test_query_without_polars_prints_csv(built: Path, tmp_path: Path) -> None:
    """Issue 31: `stb-pipeline query` where polars cannot be imported (a GPU machine that brought
    DuckDB) prints the rows as CSV and writes files, with the library's answers."""
    import os

    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'tests' / 'support' / 'without'}{os.pathsep}{REPO}",
        "STB_WITHOUT": "polars,matplotlib",
    }
    args = [sys.executable, "-m", "pipeline", "query", "best_opening_roll", "-v", "lever"]
    shown = subprocess.run([*args, "-d", str(built)], capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    want = csv_rows(outputs.to_csv(sql.run_query("best_opening_roll", built, variant="lever")))
    assert_same_rows(csv_rows(shown.stdout), want, "best_opening_roll without polars")
    target = tmp_path / "out.parquet"
    wrote = subprocess.run(
        [*args, "-d", str(built), "-o", str(target)], capture_output=True, text=True, env=env
    )
    assert wrote.returncode == 0 and "rows written" in wrote.stdout, wrote.stderr
    assert pl.read_parquet(target).height == len(want)


@pytest.mark.parametrize("variant", ["classic", "classic-score", "twelve-tiles"])
def test_value_by_open_count_and_sum_agrees_with_polars(built: Path, variant: str) -> None:
    states = pl.read_parquet(built / "states.parquet").filter(
        (pl.col("variant") == variant) & ~pl.col("terminal")
    )
    sign = 1.0 if states["maximise"][0] else -1.0
    want = (
        states.group_by("n_open", "open_sum")
        .agg(
            n_states=pl.len(),
            best=(pl.col("value") * sign).max() * sign,
            mean=pl.col("value").mean(),
            worst=(pl.col("value") * sign).min() * sign,
        )
        .sort("n_open", "open_sum")
    )
    got = sql.run_query("value_by_open_count_and_sum", built, variant=variant)
    assert got.height == want.height == states.select("n_open", "open_sum").n_unique()
    assert got["n_states"].sum() == states.height
    for g, w in zip(got.iter_rows(named=True), want.iter_rows(named=True), strict=True):
        assert (g["n_open"], g["open_sum"], g["n_states"]) == (
            w["n_open"],
            w["open_sum"],
            w["n_states"],
        )
        assert close(g["best_value"], w["best"]) and close(g["worst_value"], w["worst"])
        assert math.isclose(g["mean_value"], w["mean"], rel_tol=1e-9)
        best = states.filter(pl.col("tiles") == g["best_tiles"])
        assert close(best["value"][0], g["best_value"]) and best["open_sum"][0] == g["open_sum"]


def test_query_cli_csv_matches_the_library(cli, built: Path) -> None:
    result = cli(["query", "best_opening_roll", "-v", "lever", "-f", "csv", "-d", built])
    assert result.code == 0, result.stderr
    want = outputs.to_csv(sql.run_query("best_opening_roll", built, variant="lever"))
    assert_same_rows(csv_rows(result.stdout), csv_rows(want), "cli csv")


def test_query_cli_writes_parquet_and_csv_files(cli, built: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    result = cli(["query", "value_by_open_count_and_sum", "-d", built, "-o", target])
    assert result.code == 0, result.stderr
    assert pl.read_parquet(target).equals(
        sql.run_query("value_by_open_count_and_sum", built, variant="classic")
    )
    text_out = tmp_path / "x.txt"
    result = cli(["query", "best_opening_roll", "-d", built, "-f", "csv", "-o", text_out])
    assert result.code == 0 and csv_rows(text_out.read_text())[0]["roll"] == "9"
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left behind"


def test_query_table_output_shows_the_rows(cli, built: Path) -> None:
    result = cli(["query", "best_opening_roll", "-d", built])
    assert result.code == 0, result.stderr
    assert "0.101501853606" in result.stdout and "[3, 9]" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["query", "no_such_query"], 2, "unknown query 'no_such_query'"),
        (["query"], 2, "name a query"),
        (["query", "best_opening_roll", "-v", "nope"], 2, "variant 'nope' is not built"),
        (["query", "best_opening_roll", "-f", "parquet"], 2, "needs --output"),
        (["query", "best_opening_roll", "-f", "xml"], 2, "--format must be one of"),
        (["query", "best_opening_roll", "-p", "oops"], 2, "KEY=VALUE"),
    ],
)
def test_query_cli_bad_input(cli, built: Path, args: list[str], code: int, message: str) -> None:
    result = cli([*args, "-d", built])
    assert result.code == code
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_query_on_an_unbuilt_directory_says_build_first(cli, tmp_path: Path) -> None:
    result = cli(["query", "best_opening_roll", "-d", tmp_path])
    assert result.code == 2
    assert "not built" in result.stderr and "stb-pipeline build" in result.stderr


#: The queries whose header names the games they are about (``-- families:``, ``-- players:``).
GAME_QUERIES = [p for p in QUERY_FILES if sql.applies_to(p) != ((), None)]


def test_the_queries_of_one_family_say_so() -> None:
    """Every family-specific query declares its family; the names are the registry's."""
    from pipeline.games.registry import FAMILIES

    declared = {p.stem: sql.applies_to(p) for p in GAME_QUERIES}
    assert {"nplayer_seats", "nplayer_outcomes", "nplayer_position"} <= set(declared)
    assert declared["verifier_export"] == (("nplayer",), 2)
    for families, players in declared.values():
        assert families and set(families) <= set(FAMILIES)
        assert players is None or players >= 2


@pytest.mark.parametrize("path", GAME_QUERIES, ids=lambda p: p.stem)
def test_a_query_refuses_a_variant_it_is_not_about(cli, built: Path, path: Path) -> None:
    """`query nplayer_seats --variant classic` printed a header over no rows (exit 0); any
    query declaring its games now says the variant is not one of them: one line, exit 2."""
    families, _ = sql.applies_to(path)
    other = "classic" if "shutbox" not in families else "knucklebones-2x2"
    result = cli(["query", path.stem, "--variant", other, "-d", built])
    assert result.code == 2 and result.stdout == "", result.stdout[:300]
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert f"query {path.stem} is about games" in line and f"{other} is a game of the" in line
    with pytest.raises(PipelineError, match="is about games"):
        sql.run_query(path.stem, built, variant=other)  # the library (and the API) too


def test_a_two_player_query_refuses_three_players(cli, tmp_path: Path, built: Path) -> None:
    """``-- players: 2``: a game of the right family with another number of players is refused;
    a variant the query is about still runs."""
    assert cli(["build", "--variant", "three-player", "-d", tmp_path, "-q"]).code == 0
    result = cli(["query", "verifier_export", "--variant", "three-player", "-d", tmp_path])
    assert result.code == 2 and "three-player is a game of the nplayer family for 3 players" in (
        result.stderr
    )
    seats = sql.run_query("nplayer_seats", tmp_path, variant="three-player")
    assert seats["seat"].to_list() == [1, 2, 3]  # no player count declared: every N-player game
    assert sql.run_query("verifier_export", built, variant="two-player").height > 0


def duckdb_binary() -> str:
    """The duckdb command from the duckdb-cli package (a dependency), next to this Python."""
    beside = Path(sys.executable).parent / "duckdb"
    found = str(beside) if beside.exists() else shutil.which("duckdb")
    assert found, "the duckdb command (package duckdb-cli) is not installed"
    return found


def built_variant_for(path: Path) -> str:
    """A variant of the session's build (`--variant all`) that the query is about: the first
    of its families' variants in `all` (classic for a query about any game)."""
    from pipeline.games.registry import REGISTRY

    families, _ = sql.applies_to(path)
    if not families:
        return "classic"
    return next(n for n, v in sorted(REGISTRY.items()) if v.in_all and v.family in families)


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_readme_duckdb_recipe_gives_the_same_answer(
    built: Path, tmp_path: Path, path: Path
) -> None:
    # The README's recipe, run from a directory whose data/ is the build:
    #   duckdb -c "set variable variant = 'classic'" -c ".read queries/_views.sql" \
    #          -c ".read queries/NAME.sql"
    (tmp_path / "data").symlink_to(built, target_is_directory=True)
    (tmp_path / "queries").symlink_to(sql.QUERIES_DIR, target_is_directory=True)
    variant = sql.params(path)["variant"].default or built_variant_for(path)
    try:
        want = sql.run_query(path.stem, built, variant=variant)
    except PipelineError as exc:  # a query over a table `build` does not write
        pytest.skip(f"{path.stem} does not run on this build: {exc}")
    run = subprocess.run(
        [
            duckdb_binary(),
            "-csv",
            "-c",
            f"set variable variant = '{variant}'",
            "-c",
            ".read queries/_views.sql",
            "-c",
            f".read queries/{path.name}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and not run.stderr, run.stderr
    # The duckdb command and the duckdb module may be different versions, whose float sums can
    # differ in the last bits and so reorder near-ties: compare the rows in a canonical order.
    got, expected = csv_rows(run.stdout), csv_rows(outputs.to_csv(want))
    assert_same_rows(canonical(got), canonical(expected), f"duckdb {path.stem}")


def test_readme_duckdb_recipe_with_a_data_dir_variable(built: Path) -> None:
    # README: duckdb -c "set variable data_dir = 'data'" -c "set variable variant = 'lever'" ...
    run = subprocess.run(
        [
            duckdb_binary(),
            "-csv",
            "-c",
            f"set variable data_dir = '{built}'",
            "-c",
            "set variable variant = 'lever'",
            "-c",
            ".read queries/_views.sql",
            "-c",
            ".read queries/value_by_open_count_and_sum.sql",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and not run.stderr, run.stderr
    want = outputs.to_csv(sql.run_query("value_by_open_count_and_sum", built, variant="lever"))
    assert_same_rows(canonical(csv_rows(run.stdout)), canonical(csv_rows(want)), "data_dir")
