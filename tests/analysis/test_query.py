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
from pipeline.store import outputs
from tests.conftest import LEAN_BOARD, RATED_BOARD, REPO, invoke
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


ALL_SQL = sorted([*QUERY_FILES, *sql.QUERIES_DIR.glob("contracts/*.sql"),
                  *sql.QUERIES_DIR.glob("_*.sql")])  # fmt: skip


@pytest.mark.parametrize("path", ALL_SQL, ids=lambda p: p.stem)
def test_every_variable_a_query_reads_is_declared_with_its_default(path: Path) -> None:
    # a query reads what it reads itself and what the helpers it uses read (`-- uses:`)
    text = "".join(h.read_text() for h in sql.helpers(path)) + path.read_text()
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


def duckdb_binary() -> str:
    """The duckdb command from the duckdb-cli package (a dependency), next to this Python."""
    beside = Path(sys.executable).parent / "duckdb"
    found = str(beside) if beside.exists() else shutil.which("duckdb")
    assert found, "the duckdb command (package duckdb-cli) is not installed"
    return found


#: The variant a query runs on in the duckdb recipe's test when its default is not the one to
#: use: the full game's queries read the small board written as the full game is (lean states
#: and decisions). Every other query runs on its default, or with no variant when the variant
#: is optional (every variant's rows).
RECIPE_VARIANT = {
    "knucklebones_openings": LEAN_BOARD,
    "knucklebones_perfect_loss": LEAN_BOARD,
    "knucklebones_players": RATED_BOARD,
}


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_readme_duckdb_recipe_gives_the_same_answer(
    built_by_name: Path, tmp_path: Path, path: Path
) -> None:
    # docs/commands.md's recipe, run from a directory whose data/ is the build: the catalog's
    # views are the ones `stb-pipeline query` reads
    #   duckdb -readonly data/stb.duckdb -c "set variable variant = 'classic'" \
    #          -c ".read queries/NAME.sql"
    # on `build --variant all` and the variants built by name (every query's variant is built)
    (tmp_path / "data").symlink_to(built_by_name, target_is_directory=True)
    (tmp_path / "queries").symlink_to(sql.QUERIES_DIR, target_is_directory=True)
    variant = RECIPE_VARIANT.get(path.stem, sql.params(path)["variant"].default)
    want = sql.run_query(path.stem, built_by_name, variant=variant)
    assert want.height > 0, f"{path.stem} gives no rows on {variant}: the check would be empty"
    chosen = [] if variant is None else [f"set variable variant = '{variant}'"]
    first = [f".read queries/{helper.name}" for helper in sql.helpers(path)]  # -- uses:
    run = duckdb_run(
        tmp_path,
        "data/stb.duckdb",
        *chosen,
        *first,
        f".read queries/{path.name}",
    )
    assert run.returncode == 0 and not run.stderr, run.stderr
    # The duckdb command and the duckdb module may be different versions, whose float sums can
    # differ in the last bits and so reorder near-ties: compare the rows in a canonical order.
    got, expected = csv_rows(run.stdout), csv_rows(outputs.to_csv(want))
    assert_same_rows(canonical(got), canonical(expected), f"duckdb {path.stem}")


def test_the_catalog_runs_on_any_build_and_names_a_missing_table(tmp_path: Path) -> None:
    # A build of one box, as the README's tour makes: no summary, no decisions. The catalog
    # still has a view of every table; a query of the built tables answers, and reading a table
    # that is not built fails naming it.
    data = tmp_path / "data"
    assert invoke(["build", "--variant", "lever", "-d", data]).code == 0
    (tmp_path / "queries").symlink_to(sql.QUERIES_DIR, target_is_directory=True)

    def duckdb(*commands: str) -> subprocess.CompletedProcess:
        return duckdb_run(tmp_path, "data/stb.duckdb", "set variable variant = 'lever'", *commands)

    good = duckdb(".read queries/best_opening_roll.sql")
    assert good.returncode == 0 and not good.stderr, good.stderr
    want = outputs.to_csv(sql.run_query("best_opening_roll", data, variant="lever"))
    assert_same_rows(csv_rows(good.stdout), csv_rows(want), "duckdb on a one-box build")
    for table in ("summary", "decisions"):
        counted = duckdb(f"select count(*) from {table}")
        assert counted.returncode != 0
        assert table in counted.stderr and "not built" in counted.stderr, counted.stderr


def duckdb_run(cwd: Path, database: str, *commands: str) -> subprocess.CompletedProcess:
    """`duckdb -readonly -csv DATABASE -c COMMAND ...` in ``cwd``."""
    args = [duckdb_binary(), "-readonly", "-csv", database]
    for command in commands:
        args += ["-c", command]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_the_catalog_reads_a_copy_elsewhere_through_the_stb_data_dir_variable(
    built: Path, tmp_path: Path
) -> None:
    # docs/commands.md: the catalog's paths are absolute; a copy of the directory elsewhere is
    # read with `set variable stb_data_dir = 'COPY'` (or rewritten by `verify --fix`)
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    catalog = str(copy / "stb.duckdb")
    recipe = ["set variable variant = 'lever'", ".read queries/value_by_open_count_and_sum.sql"]
    run = duckdb_run(REPO, catalog, f"set variable stb_data_dir = '{copy}'", *recipe)
    assert run.returncode == 0 and not run.stderr, run.stderr
    want = outputs.to_csv(sql.run_query("value_by_open_count_and_sum", built, variant="lever"))
    assert_same_rows(canonical(csv_rows(run.stdout)), canonical(csv_rows(want)), "copy")
    where = duckdb_run(
        REPO, catalog, f"set variable stb_data_dir = '{copy}'", "from stb_catalog"
    ).stdout
    assert f"data_dir,{copy}\n" in where, "stb_catalog names the directory its views read"
    nowhere = duckdb_run(REPO, catalog, f"set variable stb_data_dir = '{tmp_path}/x'", *recipe)
    assert nowhere.returncode != 0 and "No files found" in nowhere.stderr, "the variable is read"
