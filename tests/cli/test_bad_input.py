"""Bad input of every kind: one clear line on stderr, a documented exit code (README "Exit codes"),
never a traceback, and the tables already written stay exactly as they were."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import UsageError
from pipeline.games.shutbox.game import RuleSet
from tests.conftest import REPO, Result, invoke

#: The exit codes the README documents (130: interrupted).
EXIT_CODES = {0, 1, 2, 3, 130}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with two small variants built (read by the query commands)."""
    data = tmp_path_factory.mktemp("small")
    variants = "classic,six-tiles-one-die,two-player"
    result = invoke(["build", "--variant", variants, "--data-dir", data])
    assert result.code == 0, result.stderr
    return data


def snapshot(data: Path) -> dict[str, str]:
    """sha256 of every file in a data dir (the lock file aside)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data.iterdir())
        if p.is_file() and p.name != ".stb.lock"
    }


def assert_one_clean_line(result: Result, code: int) -> None:
    """The failure is one `error:` line on stderr with the expected code."""
    assert result.code == code, (result.code, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def _id(value: object) -> str:
    """Short test ids for argument lists and messages."""
    return " ".join(value)[:40] if isinstance(value, list) else str(value)[:30]


BAD_QUERIES = [
    # malformed or out-of-range tiles
    (["expect", "12a"], "'a' is not a tile number"),
    (["expect", "0"], "tile 0 is not in this box"),
    (["expect", "11"], "listed twice"),
    (["expect", ""], "no open tiles given"),
    (["expect", "1,,x"], "'x' is not a tile number"),
    (["expect", "١٢"], "is not a tile number"),  # Arabic-Indic digits are not tiles
    (["expect", "--tiles", "12", "12"], "ambiguous"),
    # impossible rolls
    (["move", "12345", "1"], "roll 1 is impossible"),
    (["move", "12345", "13"], "roll 13 is impossible"),
    (["move", "12345", "99999999999999999999"], "impossible"),
    (["move", "12345", "x"], "Invalid value for 'roll'"),
    (["move", "12345", "-3"], "No such option: -3"),
    (["move", "--variant", "six-tiles-one-die", "123", "7"], "roll 7 is impossible"),
    # impossible or negative scores
    (["expect", "--objective", "target", "--target", "-1", "12"], "target must be between"),
    (["expect", "--objective", "target", "--target", "45", "12"], "target must be between"),
    (["expect", "--target", "3", "12"], "goes with objective 'target'"),
    (["expect", "--p1-score", "-5", "12"], "--p1-score applies only"),
    # unknown variants
    (["expect", "--variant", "nosuch", "12"], "unknown variant 'nosuch'"),
    (["expect", "--variant", "all", "12"], "name one variant, not all"),
    (["verify", "--variant", "nosuch"], "no rows for variant 'nosuch'"),
    (["expect", "--variant", "lever", "12"], "no rows for variant 'lever'"),
    # usage
    (["nosuchcmd"], "No such command"),
    (["expect"], "Missing argument 'tiles'"),
    (["variants", "--x"], "No such option"),
]


@pytest.mark.parametrize(("args", "message"), BAD_QUERIES, ids=_id)
def test_bad_query_input(small: Path, args: list[str], message: str) -> None:
    before = snapshot(small)
    result = invoke([*args, "--data-dir", small] if args[0] != "variants" else args)
    assert_one_clean_line(result, 2)
    assert message in result.stderr
    assert snapshot(small) == before


BAD_RULES = [
    (["--dice", "0"], "dice must be between 1 and 8, not 0"),
    (["--sides", "1"], "dice sides must be between 2 and 20, not 1"),
    (["--tiles", "30"], "tiles must be between 1 and 24, not 30"),
    (["--tiles", "0", "--objective", "score"], "tiles must be between 1 and 24"),
    # tile 13 can never be shut with two dice: an objective needing it shut means nothing
    (["--tiles", "13", "--dice", "2"], "tile 13 can never be shut"),
    (["--tiles", "7", "--dice", "1"], "tile 7 can never be shut"),
    (["--one-die", "sometimes"], "one-die rule must be one of"),
    (["--one-die", "forced"], "a forced single die with no condition is just --dice 1"),
    (["--one-die", "never", "--one-die-sum", "6"], "the one-die rule is 'never'"),
    (["--dice", "1", "--one-die-sum", "6"], "a one-die rule needs more than one die"),
    (["--one-die-sum", "0"], "limit must be positive"),
    (["--one-die-shut", "0"], "are not in a box of tiles 1..9"),
    (["--one-die-shut", ",,,"], "give tiles"),
    (["--one-die-shut", "7x"], "give tiles"),
    (["--objective", "win"], "objective must be one of"),
    (["--scoring", "digital", "--tiles", "10"], "needs at most 9 tiles"),
    (["--scoring", "roman"], "scoring must be one of"),
    (["--max-per-move", "0"], "would allow no move"),
    (["--name", "classic", "--tiles", "5"], "taken by a registered variant"),
    (["--name", "all", "--tiles", "5"], "taken by a registered variant"),
    (["--name", "a,b", "--tiles", "5"], "--name 'a,b'"),
    (["--name", "", "--tiles", "5"], "--name ''"),
    (["--name", "mine"], "--name needs rule options"),
    (["--tiles", "5", "--variant", "lever"], "not both"),
    (["--variant", "custom"], "needs rule options"),
    (["--variant", "classic,nosuch"], "unknown variant 'nosuch'"),
]


@pytest.mark.parametrize("command", ["build", "enumerate", "edges", "solve", "policy"])
@pytest.mark.parametrize(("args", "message"), BAD_RULES, ids=_id)
def test_contradictory_rules_and_variants(
    small: Path, command: str, args: list[str], message: str
) -> None:
    before = snapshot(small)
    result = invoke([command, *args, "--data-dir", small])
    assert_one_clean_line(result, 2)
    assert message in result.stderr
    assert snapshot(small) == before


def test_unwritable_data_dir_fails_before_solving(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = invoke(["build", "--variant", "twelve-tiles", "--data-dir", blocker / "data"])
    assert_one_clean_line(result, 1)
    assert "cannot write to data directory" in result.stderr
    assert blocker.read_text() == "not a directory"


def test_missing_tables_say_what_to_build(tmp_path: Path) -> None:
    for args in (["expect", "12"], ["move", "12", "3"], ["verify"]):
        result = invoke([*args, "--data-dir", tmp_path / "none"])
        assert_one_clean_line(result, 2)
        assert "stb-pipeline build" in result.stderr


def truncated(path: Path) -> None:
    """Cut a file to half its length."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def foreign(path: Path) -> None:
    """Replace a table by a Parquet file of someone else's."""
    import polars as pl

    pl.DataFrame({"a": [1, 2, 3]}).write_parquet(path)


def text(path: Path) -> None:
    """Replace a table by a text file."""
    path.write_text("state_id,value\n1,0.5\n")


def garbage(path: Path) -> None:
    """Replace a table by bytes that are nothing at all."""
    path.write_bytes(b"\x00\xffgarbage" * 64)


def empty(path: Path) -> None:
    """Replace a table by an empty file."""
    path.write_bytes(b"")


@pytest.mark.parametrize(
    "damage", [truncated, foreign, text, garbage, empty], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("table", ["states", "edges", "policy", "moves"])
def test_damaged_table_is_reported_and_nothing_else_is_touched(
    small: Path, tmp_path: Path, damage, table: str
) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    shutil.copytree(small, data)
    damage(data / f"{table}.parquet")
    before = snapshot(data)
    writer = {"states": "solve", "edges": "edges", "policy": "policy", "moves": "policy"}[table]
    commands = [
        # -q: on a busy machine the build passes 2 s and its progress lines come first
        ["build", "--variant", "classic", "--force", "-q"],
        [writer, "--variant", "six-tiles-one-die"],
        ["verify"],
        ["query", "best_opening_roll"],
        ["query", "top_states", "-f", "csv", "-o", tmp_path / "top.csv"],
    ]
    if table == "states":  # what an answer reads (its rules list the moves)
        commands.append(["move", "12345", "7"])
    if table in ("states", "edges"):
        commands.append(["export", "verifier", "-o", tmp_path / "v.txt"])
    for args in commands:
        result = invoke([*args, "--data-dir", data])
        assert_one_clean_line(result, 1)
        assert f"{table}.parquet" in result.stderr
        assert "stb-pipeline build --force" in result.stderr, "says how to repair it"
        assert snapshot(data) == before, args
    if table in ("policy", "moves"):  # an answer reads the values alone: still the same
        result = invoke(["move", "12345", "7", "--data-dir", data])
        assert result.code == 0 and invoke(["move", "12345", "7", "-d", small]).stdout == (
            result.stdout
        )


# -- issue 15: every class of bad input, for every command -------------------------------------

HUGE = "9" * 40
HUGER = "9" * 5000  # beyond int()'s 4,300 digits
DATA = ("-d", "{data}")
CSV = ("-f", "csv")
#: (arguments, exit code, words the one-line error must hold). {data} is the small build,
#: {tmp} a scratch directory holding `existing.csv`. One case a line.
BAD_INPUT = [
    # query names are names from the library, never paths
    (["query", "../queries/best_opening_roll", "-d", "{data}"], 2, "is not a query name"),
    (["query", "/etc/passwd", "-d", "{data}"], 2, "is not a query name"),
    (["query", "{tmp}/existing.csv", "-d", "{data}"], 2, "is not a query name"),
    (["query", "contracts/bellman", "-d", "{data}"], 2, "is not a query name"),
    (["query", "_views", "-d", "{data}"], 2, "is not a query name"),
    (["query", "Best_Opening_Roll", "-d", "{data}"], 2, "did you mean best_opening_roll?"),
    (["query", "nosuch", "-d", "{data}"], 2, "unknown query 'nosuch'"),
    # issue 48: a query's name almost right is guessed, as a variant's is
    (["query", "best_opening", *DATA], 2, "did you mean best_opening_roll?"),
    (["query", "strategy_crad", *DATA], 2, "did you mean strategy_card"),
    (
        ["query", "Strategy_Card", *DATA],
        2,
        "unknown query 'Strategy_Card'; did you mean strategy_c",
    ),
    (["query", "-d", "{data}"], 2, "name a query"),
    # parameters: declared, typed, in range, bound
    (["query", "best_opening_roll", "-p", "strategy=nonsense", "-d", "{data}"], 2, "no parameter"),
    (["query", "strategy_mistakes", "-p", "strategy=nonsense", "-d", "{data}"], 2, "one of"),
    (["query", "strategy_mistakes", "-p", "strategy=", "-d", "{data}"], 2, "one of"),
    (["query", "top_states", "-p", "top=abc", "-d", "{data}"], 2, "must be an integer"),
    (["query", "top_states", "-p", "top=0", "-d", "{data}"], 2, "from 1 to"),
    (["query", "top_states", "-p", "top=-5", "-d", "{data}"], 2, "from 1 to"),
    (["query", "top_states", "-p", "top=2.5", "-d", "{data}"], 2, "must be an integer"),
    (["query", "top_states", "-p", "top=1e999", "-d", "{data}"], 2, "must be an integer"),
    (["query", "top_states", "-p", f"top={HUGE}", "-d", "{data}"], 2, "must be an integer"),
    (["query", "top_states", "-p", "top=1; drop view states", "-d", "{data}"], 2, "integer"),
    (["query", "top_states", "-p", "top", "-d", "{data}"], 2, "write KEY=VALUE"),
    (["query", "top_states", "-p", "=3", "-d", "{data}"], 2, "write KEY=VALUE"),
    (["query", "top_states", "-p", "top=1", "-p", "top=2", "-d", "{data}"], 2, "given twice"),
    (["query", "top_states", "-p", "variant=classic", "-v", "classic", "-d", "{data}"], 2, "once"),
    (["query", "best_opening_roll", "-v", "classic' or ''='", "-d", "{data}"], 2, "is not built"),
    (["query", "best_opening_roll", "-v", "lever", "-d", "{data}"], 2, "is not built"),
    # the strategies stage on what it cannot search, or on a variant not built (issue 41)
    (["strategies", "--variant", "two-player", *DATA], 2, "no such rules to search"),
    (["strategies", "--variant", "knucklebones-2x2", *DATA], 2, "the knucklebones family"),
    (["strategies", "--variant", "lever", *DATA], 2, "lever is not built in"),
    # an objective without rows: refused, not an empty card with exit 0 (issue 41)
    (["query", "strategy_card", "-p", "objective=target", "-f", "csv", *DATA], 2, "'target'"),
    (["query", "strategy_exceptions", "-p", "objective=target", *DATA], 2, "it has objective"),
    # outputs never land among the tables, nor replace a file unasked
    (["query", "top_states", "-o", "{data}/states.parquet", "--force", *DATA], 2, "'states.p"),
    (["query", "top_states", "-f", "csv", "-o", "{data}/new.parquet", *DATA], 2, "'new.parquet'"),
    (
        ["query", "top_states", *CSV, "-o", "{data}/manifest.json", "--force", *DATA],
        2,
        "'manifest.j",
    ),
    (
        ["query", "top_states", *CSV, "-o", "{data}/stb.duckdb", "--force", *DATA],
        2,
        "'stb.duckdb'",
    ),
    (
        ["query", "top_states", *CSV, "-o", "{data}/.stb.lock", "--force", *DATA],
        2,
        "'.stb.lock'",
    ),
    (["query", "best_opening_roll", "-o", "{tmp}/existing.csv", "-d", "{data}"], 2, "--force"),
    (["query", "best_opening_roll", "-f", "csv", "-o", "{tmp}", "-d", "{data}"], 2, "a folder"),
    (["query", "best_opening_roll", "-f", "csv", "-o", ".", "-d", "{data}"], 2, "a folder"),
    (["query", "best_opening_roll", "-f", "csv", "-o", "/", "-d", "{data}"], 2, "a folder"),
    (["explore", "-o", "{data}/stb.duckdb", "--force", *DATA], 2, "'stb.duckdb' in it"),
    (["explore", "-o", "{tmp}/existing.csv", *DATA], 2, "exists: add --force"),
    (["export", "verifier", "-o", "{data}/manifest.json", "-d", "{data}"], 2, "data directory"),
    (["export", "verifier", "-o", "{tmp}/existing.csv", "-d", "{data}"], 2, "add --force"),
    (["report", "--out", "{data}", "-d", "{data}"], 2, "would mix the report with the tables"),
    # a folder or file named like a table (or the catalog) would be read as one (issue 41)
    (["export", "dataset", "-o", "{data}/x.parquet", *DATA], 2, "'x.parquet' in it"),
    (["export", "dataset", "-o", "{data}/stb.duckdb", *DATA], 2, "'stb.duckdb' in it"),
    (["explore", "-o", "{data}/page.parquet", *DATA], 2, "'page.parquet' in it"),
    (["report", "--out", "{data}/r.parquet", *DATA], 2, "'r.parquet' in it"),
    (["play", "--rule", "max-high,,min-count", *DATA], 2, "with none empty"),
    # empty or malformed lists are mistakes, not "everything"
    (["verify", "--variant", "", "-d", "{data}"], 2, "--variant ''"),
    (["verify", "--variant", ",", "-d", "{data}"], 2, "--variant ','"),
    (["verify", "--variant", "classic,", "-d", "{data}"], 2, "none empty"),
    (["benchmark", "--strategy", "", "-d", "{data}"], 2, "--strategy ''"),
    (["benchmark", "--strategy", "greedy,,random", "-d", "{data}"], 2, "none empty"),
    (["benchmark", "--strategy", "nosuch", "--games", "10", "-d", "{data}"], 2, "unknown strategy"),
    (["knucklebones", "benchmark", "--opponents", "", "-d", "{data}"], 2, "--opponents ''"),
    (["knucklebones", "benchmark", "--opponents", ",", "-d", "{data}"], 2, "none empty"),
    (["knucklebones", "benchmark", "--opponents", "ours-d0", "-d", "{data}"], 2, "depth must be"),
    (["knucklebones", "benchmark", "--opponents", "seed-d99", "-d", "{data}"], 2, "depth must"),
    (["knucklebones", "benchmark", "--opponents", "nobody", "-d", "{data}"], 2, "unknown player"),
    (["knucklebones", "benchmark", "--depths", "", "-d", "{data}"], 2, "whole numbers"),
    (["knucklebones", "benchmark", "--depths", "1,,2", "-d", "{data}"], 2, "whole numbers"),
    (["knucklebones", "benchmark", "--depths", "0", "-d", "{data}"], 2, "--depth must be"),
    # tolerances: NaN or infinity would pass every value
    (
        ["check-verifier", "{tmp}/existing.csv", "--tolerance", "nan", "-d", "{data}"],
        2,
        "tolerance",
    ),
    (
        ["check-verifier", "{tmp}/existing.csv", "--tolerance", "inf", "-d", "{data}"],
        2,
        "tolerance",
    ),
    (["check-verifier", "{tmp}/existing.csv", "--tolerance", "-1", "-d", "{data}"], 2, "tolerance"),
    (["check-verifier", "{tmp}/existing.csv", "--tolerance", "1e999", "-d", "{data}"], 2, "tolera"),
    (["check-verifier", "{tmp}/existing.csv", "--tolerance", "x", "-d", "{data}"], 2, "Invalid"),
    # numbers past any sensible range
    (["benchmark", "--games", "0", "-d", "{data}"], 2, "--games must be between"),
    (["benchmark", "--games", HUGE, "-d", "{data}"], 2, "--games must be between"),
    (["benchmark", "--seed", "-1", "--games", "10", "-d", "{data}"], 2, "--seed must be between"),
    (["benchmark", "--seed", HUGE, "--games", "10", "-d", "{data}"], 2, "--seed must be between"),
    (["play", "--seed", "-1", "-d", "{data}"], 2, "--seed must be between"),
    (["play", "--seed", HUGE, "-d", "{data}"], 2, "--seed must be between"),
    (["play", "--seat", "3", "-d", "{data}"], 2, "--seat"),
    (["knucklebones", "play", "--seed", "-1"], 2, "--seed must be between"),
    (["knucklebones", "play", "--seed", HUGE], 2, "--seed must be between"),
    (["knucklebones", "play", "--depth", "0"], 2, "--depth must be between"),
    (["knucklebones", "solve", "44/1/_", "2/_/_", HUGE], 2, "is not a face"),
    (["knucklebones", "solve", "44/1/_", "2/_/_", "4", "--depth", HUGE], 2, "--depth must be"),
    (["knucklebones", "tree", "44/1/_", "2/_/_", "4", "--depth", "-1"], 2, "--depth must be"),
    (["knucklebones", "benchmark", "--games", HUGE, "-d", "{data}"], 2, "--games must be"),
    (["knucklebones", "benchmark", "--seed", HUGE, "-d", "{data}"], 2, "--seed must be"),
    (["move", "12345", HUGE, "-d", "{data}"], 2, "impossible"),
    (["expect", "-v", "two-player", "12", "--p1-score", HUGE, "-d", "{data}"], 2, "score"),
    (["export", "verifier", "-o", "{tmp}/v", "--tiles", HUGE, "-d", "{data}"], 2, "between 1 and"),
    (["export", "verifier", "-o", "{tmp}/v", "--one-die-sum", HUGE, "-d", "{data}"], 2, "limit"),
    # issue 26: empty or degenerate names and lists are mistakes, never the default
    (["expect", "-v", "", "123", *DATA], 2, "--variant '': give a variant name"),
    (["move", "-v", " ", "123", "4", *DATA], 2, "--variant ' ': give a variant name"),
    (["expect", "-v", "", "--tiles", "5", "123", *DATA], 2, "--variant ''"),
    (["expect", ",", *DATA], 2, "between the commas"),
    (["move", " , ", "4", *DATA], 2, "between the commas"),
    (["expect", "1,1,2", *DATA], 2, "tile 1 is listed twice"),
    (["build", "--one-die-shut", "99", "-d", "{tmp}/new"], 2, "tile 9 is named twice"),
    (["build", "--one-die-shut", "7,8,7", "-d", "{tmp}/new"], 2, "tile 7 is named twice"),
    (["expect", "123", "-d", ""], 2, "give a path, not ''"),
    (["query", "top_states", "-f", "csv", "-o", "", *DATA], 2, "give a path, not ''"),
    (["export", "verifier", "-o", "", *DATA], 2, "give a path, not ''"),
    (["report", "--out", "", *DATA], 2, "give a path, not ''"),
    (["explore", "-o", " ", *DATA], 2, "give a path, not ' '"),
    (["check-verifier", "", *DATA], 2, "give a path, not ''"),
    # options that do not apply to the game
    (["build", "-v", "knucklebones-2x2", "--exact", "-d", "{tmp}/new"], 2, "--exact does not"),
    (["solve", "-v", "knucklebones-2x2", "--exact", "-d", "{tmp}/new"], 2, "--exact does not"),
    (
        ["build", "--tiles", "16", "--objective", "score", "--exact", "-d", "{tmp}/new"],
        2,
        "--exact",
    ),
    # a target the tiles no roll can shut already exceed; the message says what would do
    (
        ["build", "--tiles", "13", "--objective", "target", "--target", "5", "-d", "{tmp}/new"],
        2,
        "so the score is at least 13 and P(score <= 5) is 0; use a target of at least 13",
    ),
    (
        ["build", "--tiles", "14", "--objective", "shut", "-d", "{tmp}/new"],
        2,
        "use objective 'score' or 'target'",
    ),
    # parameters the query does not declare, even names of the command's own arguments
    (["query", "top_states", "-p", "data_dir=/tmp", *DATA], 2, "has no parameter 'data_dir'"),
    (["query", "top_states", "-p", "name=best_opening_roll", *DATA], 2, "no parameter 'name'"),
    # outputs under a file: which path is a file, exit 1 as for any file that cannot be written
    (["export", "verifier", "-o", "{tmp}/existing.csv/v", *DATA], 1, "is a file, not a folder"),
    (["query", "top_states", "-o", "{tmp}/existing.csv/a/b.csv", *DATA], 1, "is a file, not a"),
    (["explore", "-o", "{tmp}/existing.csv/e.html", *DATA], 1, "is a file, not a folder"),
    (["report", "--out", "{tmp}/existing.csv/r", *DATA], 1, "is a file, not a folder"),
    (["build", "-v", "classic", "-d", "{tmp}/existing.csv/d"], 1, "is a file, not a folder"),
    # thousands of digits: beyond int()'s limit, still one line
    (["expect", f"1,{HUGER}", *DATA], 2, "is not in this box"),
    (["expect", "--tiles", "12", f"1,{HUGER}", *DATA], 2, "is not in this box"),
    (["move", "123", HUGER, *DATA], 2, "Invalid value for 'roll'"),
    (["build", "--one-die-shut", HUGER, "-d", "{tmp}/new"], 2, "tile 9 is named twice"),
    (["build", "--one-die-shut", f"1,{HUGER}", "-d", "{tmp}/new"], 2, "give tiles"),
    (["query", "top_states", "-p", f"top={HUGER}", *DATA], 2, "must be an integer"),
]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory (also the working directory) with one existing file; empty stdin."""
    (tmp_path / "existing.csv").write_text("kept\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    return tmp_path


@pytest.mark.parametrize(("args", "code", "message"), BAD_INPUT, ids=_id)
def test_bad_input_of_every_class(
    small: Path, scratch: Path, args: list[str], code: int, message: str
) -> None:
    before = snapshot(small)
    result = invoke([a.format(data=small, tmp=scratch) for a in args])
    assert_one_clean_line(result, code)
    assert message in result.stderr
    assert snapshot(small) == before
    assert (scratch / "existing.csv").read_text() == "kept\n"
    assert not list(small.glob(".*.tmp")) and not list(scratch.glob(".*.tmp"))


SHUTTHEBOX = [
    ["--one", "--move", "12345", HUGE],
    ["--two", "--expect", "123", HUGE],
    ["--two", "--move", "123", HUGE, "4"],
    ["--one", "--expect", "123", "--tiles", HUGE],
    ["--one", "--expect", "123", "--one-die-sum", HUGE],
    ["--one", "--expect", "123", "--one-die-sum", "1001"],
    ["--one", "--expect", HUGE],
    ["--one", "--expect", ""],
    ["--one", "--two", "--expect", "123"],
]


@pytest.mark.parametrize("args", SHUTTHEBOX, ids=_id)
def test_shutthebox_bad_input_is_an_error_and_a_usage_line(
    small: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args
) -> None:  # type: ignore[no-untyped-def]
    from pipeline.apps.course.command import main

    monkeypatch.setenv("STB_DATA_DIR", str(small))
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("ShutTheBox: error: ") and err[1].startswith("usage")


def damaged_manifest_json(path: Path) -> None:
    """A manifest that is not JSON."""
    path.write_text("{not json")


def manifest_without_keys(path: Path) -> None:
    """JSON, but not a manifest of ours."""
    path.write_text('{"format": 1}')


@pytest.mark.parametrize("damage", [damaged_manifest_json, manifest_without_keys, empty])
@pytest.mark.parametrize(
    "args",
    [
        ["build", "--variant", "six-tiles-one-die", "--force"],
        ["verify"],
        ["benchmark", "--variant", "classic", "--games", "100", "--strategy", "greedy"],
        ["knucklebones", "benchmark", "--games", "1", "--depths", "1", "--opponents", "random"],
    ],
    ids=_id,
)
def test_damaged_manifest_is_one_line_naming_it(
    small: Path, tmp_path: Path, damage, args: list[str]
) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    shutil.copytree(small, data)
    damage(data / "manifest.json")
    before = snapshot(data)
    result = invoke([*args, "--data-dir", data])
    assert_one_clean_line(result, 1)
    assert "manifest.json" in result.stderr and "stb-pipeline build --force" in result.stderr
    assert snapshot(data) == before


def test_verify_fails_when_a_recorded_table_is_missing(small: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(small, data)
    (data / "edges.parquet").unlink()
    result = invoke(["verify", "--data-dir", data])
    assert_one_clean_line(result, 3)
    assert "edges.parquet is missing" in result.stderr and "build --force" in result.stderr


def test_verify_fails_without_contract_files(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.analysis import contracts

    monkeypatch.setattr(contracts, "CONTRACTS_DIR", tmp_path / "nowhere")
    result = invoke(["verify", "--data-dir", small])
    assert_one_clean_line(result, 3)
    assert "no contract files" in result.stderr


def test_verify_fails_when_it_checked_nothing(small: Path, tmp_path: Path) -> None:
    import polars as pl

    data = tmp_path / "data"
    shutil.copytree(small, data)
    (data / "manifest.json").unlink()
    for name in ("edges", "policy", "moves", "strategy_search", "strategy_exceptions"):
        (data / f"{name}.parquet").unlink()  # contracts over them are skipped
    states = pl.read_parquet(data / "states.parquet")
    states.head(0).write_parquet(data / "states.parquet")
    result = invoke(["verify", "--data-dir", data])
    assert result.code in (2, 3), result.stderr  # no rows of any variant, or nothing checked
    assert_one_clean_line(result, result.code)


def test_verify_reports_rows_checked_per_contract(small: Path) -> None:
    result = invoke(["verify", "--variant", "classic", "--data-dir", small])
    assert result.code == 0, result.stderr
    assert "contracts/bellman: 512 rows checked, 0 violations" in result.stdout
    assert re.search(r"all \d+ contracts hold in .*: [\d,]+ rows checked", result.stdout)


def test_stale_temporary_files_are_swept_by_the_next_build(small: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(small, data)
    stale = data / ".edges.parquet.999999999.tmp"  # a pid above any pid_max: a dead writer
    stale.write_bytes(b"half a table")
    result = invoke(["build", "--variant", "six-tiles-one-die", "--data-dir", data])
    assert result.code == 0, result.stderr  # unchanged: skipped, yet the sweep ran
    assert not stale.exists()


def test_a_build_interrupted_while_writing_leaves_no_temporary_file(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.store import merging

    data = tmp_path / "data"
    shutil.copytree(small, data)
    before = snapshot(data)
    real = merging.TableMerge.finish
    calls = []

    def finish_then_interrupt(self: merging.TableMerge) -> merging.StagedTable:
        calls.append(self.path)
        if len(calls) == 2:  # after the first table is staged, while finishing the second
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(merging.TableMerge, "finish", finish_then_interrupt)
    # -q: on a busy machine the build passes 2 s and its progress lines come first
    result = invoke(["build", "--variant", "classic", "--force", "-q", "--data-dir", data])
    assert_one_clean_line(result, 130)
    assert snapshot(data) == before
    assert not list(data.glob(".*.tmp"))


def test_a_big_box_interrupted_on_its_first_build_leaves_nothing_behind(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: Ctrl-C in the middle of a streamed build (a box of 16 tiles) leaves the old
    tables as they were, and no temporary file or empty folder of the new variant."""
    from pipeline.games.shutbox import stream

    data = tmp_path / "data"
    shutil.copytree(small, data)
    before = snapshot(data)
    real = stream.StreamSolver._solve

    def solve_then_interrupt(self, layer, *args):  # type: ignore[no-untyped-def]
        if layer == 8:  # half way through the layers, after batches were written
            raise KeyboardInterrupt
        return real(self, layer, *args)

    monkeypatch.setattr(stream.StreamSolver, "_solve", solve_then_interrupt)
    # -q: on a busy machine the build passes 2 s and its progress lines come first
    result = invoke(["build", "--tiles", "16", "--objective", "score", "-q", "--data-dir", data])
    assert_one_clean_line(result, 130)
    assert snapshot(data) == before
    assert not [p for p in data.rglob("*") if p.name.endswith(".tmp")]
    assert not (data / "variants").exists()


def test_sigterm_stops_like_ctrl_c_with_one_line(small: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "play", "--seed", "1", "--data-dir", str(small)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # the game has started and waits for a choice
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.startswith("error: interrupted") and err.count("\n") == 1, err


#: Every command that writes a file named by -o (the Knucklebones players' commands are in
#: tests/games/knucklebones), with ``{out}`` for the file and the work it does after its checks.
OUTPUTS = [
    (["query", "top_states", "-f", "csv", "-o", "{out}", *DATA], "pipeline.analysis.sql.run_query"),
    (["explore", "-v", "classic", "-o", "{out}", *DATA], "pipeline.apps.explorer.collect"),
    (
        ["export", "verifier", "-v", "two-player", "-o", "{out}", *DATA],
        "pipeline.apps.course.verifier.export_lines",
    ),
]


def _output(args: list[str], data: Path, out: object) -> list[str]:
    return [a.format(data=data, out=out) for a in args]


@pytest.mark.parametrize(("args", "work"), OUTPUTS, ids=lambda v: _id(v))
def test_every_output_writes_into_a_pipe_and_leaves_it_a_pipe(
    small: Path, tmp_path: Path, args: list[str], work: str
) -> None:
    """Issue 48: -o onto a FIFO (or a device) is written to, never replaced by a regular file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = invoke(_output(args, small, fifo))
    assert result.code == 0, result.stderr
    reader.join(timeout=60)
    assert fifo.is_fifo() and got and got[0]
    assert invoke(_output(args, small, "/dev/null")).code == 0
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize(("args", "work"), OUTPUTS, ids=lambda v: _id(v))
def test_every_output_refuses_a_data_directorys_own_files_and_checks_first(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], work: str
) -> None:
    """Issue 48: the one -o rule, before any work: never a data directory's tables, manifest or
    catalog (the one given, or another found above the path), never an existing file without
    --force, never a folder that takes no file."""
    other = tmp_path / "other"
    shutil.copytree(small, other)
    before, theirs = snapshot(small), snapshot(other)
    monkeypatch.setattr(work, _never_called)
    for target in (small, other):
        for name in ("states.parquet", "manifest.json", "stb.duckdb"):
            result = invoke([*_output(args, small, target / name), "--force"])
            assert_one_clean_line(result, 2)
            assert "keeps its tables" in result.stderr
    (tmp_path / "mine.txt").write_text("mine")
    result = invoke(_output(args, small, tmp_path / "mine.txt"))
    assert_one_clean_line(result, 2)
    assert "add --force" in result.stderr
    result = invoke(_output(args, small, "/proc/out.txt"))
    assert_one_clean_line(result, 1)
    assert "cannot write /proc/out.txt: /proc takes no new file" in result.stderr
    assert snapshot(small) == before and snapshot(other) == theirs
    assert (tmp_path / "mine.txt").read_text() == "mine"


def _never_called(*args: object, **kwargs: object) -> None:
    raise AssertionError("the work ran before its output was checked")


@pytest.mark.parametrize(
    "args",
    [
        ["report", *DATA, "--out", "{out}"],
        ["export", "dataset", "-v", "classic", *DATA, "-o", "{out}"],
    ],
    ids=_id,
)
def test_a_folder_output_is_never_a_pipe_a_device_or_a_loop(
    small: Path, tmp_path: Path, args: list[str]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for target, code in ((fifo, 2), ("/dev/null", 2), (loop, 2), ("/proc/report", 1)):
        result = invoke(_output(args, small, target))
        assert_one_clean_line(result, code)
    assert fifo.is_fifo()


@pytest.mark.parametrize(
    "args",
    [
        ["expect", "123", "-d", "{long}"],
        ["query", "top_states", "-o", "{long}/x.csv", *DATA],
        ["verify", "-d", "{loop}"],
        ["report", "--out", "{loop}/r", *DATA],
        ["check-verifier", "{long}", *DATA],
        ["knucklebones", "rate", "--labelled", "{long}", "--no-write", *DATA],
        ["knucklebones", "check-artefacts", "--models", "{long}"],
        ["knucklebones", "label", "-o", "{long}.parquet", *DATA],
    ],
    ids=_id,
)
def test_a_path_no_file_system_takes_is_refused_as_it_is_read(
    small: Path, tmp_path: Path, args: list[str]
) -> None:
    """Issue 48, item 9: a name over 255 bytes, or links that loop, in any path option."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    long = tmp_path / ("x" * 300)
    result = invoke([a.format(data=small, long=long, loop=loop) for a in args])
    assert_one_clean_line(result, 2)
    assert "255" in result.stderr or "loop" in result.stderr


def test_readme_lists_the_exit_codes() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in sorted(EXIT_CODES):
        assert f"| {code} |" in section


# -- fuzz --------------------------------------------------------------------------------------

small_ints = st.one_of(st.integers(-3, 30), st.sampled_from([2**31, -(2**40)]))
maybe = st.none() | small_ints


@settings(max_examples=300, deadline=None)
@given(
    tiles=small_ints,
    dice=small_ints,
    sides=small_ints,
    one_die=st.sampled_from(["never", "forced", "optional", "", "Forced"]),
    one_die_sum=maybe,
    one_die_shut=st.lists(small_ints, max_size=4).map(tuple),
    objective=st.sampled_from(["shut", "score", "target", "wins", ""]),
    target=maybe,
    max_per_move=maybe,
    scoring=st.sampled_from(["sum", "digital", "product"]),
)
def test_rule_set_constructor_fuzz(**kwargs: object) -> None:
    """Any combination either makes a consistent rule set or raises UsageError, nothing else."""
    try:
        rules = RuleSet(**kwargs)  # type: ignore[arg-type]
    except UsageError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert rules.problems() == []
    assert 1 <= rules.tiles <= 24 and 1 <= rules.dice <= 8 and 2 <= rules.sides <= 20
    assert rules.max_score() >= 1
    assert rules.slug().startswith("stb-")
    top = rules.dice * rules.sides
    if rules.objective == "shut":
        assert rules.tiles <= top  # every tile can be shut by some roll
    if rules.objective == "target":  # the target can be met despite the tiles no roll shuts
        assert rules.target >= rules.score_of(list(range(top + 1, rules.tiles + 1)))


TOKENS = st.sampled_from(
    [
        "12345", "123456789", "0", "-1", "1,2,10", "x", "", "7", "13", "99999999999999999999",
        "classic", "six-tiles-one-die", "all", "nosuch", "custom", "--force", "--help",
        "shut", "score", "target", "forced", "optional", "digital", "789", ",", "3.5",
    ]
)  # fmt: skip
OPTIONS = st.sampled_from(
    [
        "--variant", "--tiles", "--dice", "--sides", "--one-die", "--one-die-sum",
        "--one-die-shut", "--objective", "--target", "--max-per-move", "--scoring", "--name",
        "--p1-score", "--force",
    ]
)  # fmt: skip
COMMANDS = ["expect", "move", "verify", "variants", "build", "enumerate", "edges", "solve"]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    command=st.sampled_from([*COMMANDS, "policy", "nosuch"]),
    words=st.lists(st.one_of(TOKENS, OPTIONS), max_size=6),
)
def test_cli_argument_fuzz(small: Path, tmp_path: Path, command: str, words: list[str]) -> None:
    """Random arguments: a documented code, and on failure one clean stderr line, no damage.

    Writing commands get a data dir they cannot create, so only validation runs (fast); the
    read-only commands read the small build, which must not change.
    """
    before = snapshot(small)
    writes = command in ("build", "enumerate", "edges", "solve", "policy")
    target = tmp_path / "blocker" if writes else small
    if writes:
        target.write_text("a file, not a directory")
        target = target / "data"
    if command == "verify" and not ({"--variant"} & set(words)):
        words = [*words, "--variant", "six-tiles-one-die"]  # keep each example fast
    result = invoke([command, *words, "--data-dir", target])
    assert result.code in EXIT_CODES
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if result.code != 0 and "--help" not in words and "Usage:" not in result.stderr:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    if writes and "--help" not in words:
        assert result.code != 0  # never solved and written into a file's path
    assert snapshot(small) == before


def test_interrupt_is_one_line_and_exit_130(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.store import tables

    data = tmp_path / "data"
    shutil.copytree(small, data)
    before = snapshot(data)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tables, "commit", interrupted)
    # -q: on a busy machine the build passes 2 s and its progress lines come first
    result = invoke(["build", "--variant", "classic", "--force", "-q", "--data-dir", data])
    assert_one_clean_line(result, 130)
    assert snapshot(data) == before


@pytest.mark.parametrize("where", ["graph", "writer"])
def test_running_out_of_memory_is_one_line_exit_1_and_keeps_the_tables(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Issue 14: a build that runs out of memory (numpy, pyarrow and polars raise MemoryError
    subclasses) says so in one line, not as a bug, and leaves every table as it was."""
    from pipeline.games.shutbox.game import ShutTheBox
    from pipeline.store import merging

    data = tmp_path / "data"
    shutil.copytree(small, data)
    before = snapshot(data)

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 12.0 GiB for an array")

    target = (ShutTheBox, "graph") if where == "graph" else (merging.TableMerge, "add")
    monkeypatch.setattr(*target, no_memory)
    # -q: on a busy machine the build passes 2 s and its progress lines come first
    result = invoke(["build", "--variant", "classic,lever", "--force", "-q", "--data-dir", data])
    assert_one_clean_line(result, 1)
    assert "out of memory" in result.stderr and "bug" not in result.stderr
    assert snapshot(data) == before
    assert not [p for p in data.rglob("*") if p.name.endswith(".tmp")]


ANY_COMMAND = [
    ["expect"], ["move"], ["verify"], ["variants"], ["query"], ["export", "verifier"],
    ["export", "dataset"], ["check-verifier"], ["benchmark"], ["build"], ["enumerate"],
    ["edges"], ["solve"], ["policy"], ["report"], ["play"], ["knucklebones", "solve"],
    ["knucklebones", "tree"],
    ["knucklebones", "benchmark"], ["knucklebones", "play"], ["nosuch"],
]  # fmt: skip
#: Commands that write tables: they get a data dir that cannot be created, so only their
#: checks run (fast), and nothing they could do reaches the small build.
WRITERS = {"build", "enumerate", "edges", "solve", "policy", "benchmark"}
ANY_WORD = st.sampled_from(
    [
        "best_opening_roll", "top_states", "strategy_mistakes", "../queries/best_opening_roll",
        "/etc/passwd", "contracts/bellman", "{data}/states.parquet", "{data}/manifest.json",
        "{tmp}/out.csv", "{tmp}/existing.csv", "{tmp}", "", ",", "a,,b", "nan", "inf", "-inf",
        "-1", "0", "1", "3", "4", HUGE, "1e999", "2.5", "classic", "two-player", "all",
        "six-tiles-one-die", "nosuch", "12345", "123456789", "44/1/_", "2/_/_", "ours-d0",
        "seed-d2", "random", "greedy", "strategy=nonsense", "strategy=greedy", "top=3",
        "top=abc", "x=1", "variant=classic", "csv", "parquet", "table",
        "-p", "-o", "-f", "--force", "--variant", "--tolerance", "--games", "--seed", "--depth",
        "--depths", "--opponents", "--strategy", "--out", "--list", "--tiles", "--dice",
        "--p1-score", "--seat", "--quiz", "--all", "--second", "--objective", "--help",
    ]
)  # fmt: skip


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=st.sampled_from(ANY_COMMAND), words=st.lists(ANY_WORD, max_size=7))
def test_any_argument_list_gets_an_answer_or_one_line(
    small: Path, scratch: Path, command: list[str], words: list[str]
) -> None:
    """Random argument lists at every command: exit 0-3, a failure is one `error:` line (or, for
    check-verifier's wrong lines, the report on stdout), and the tables never change."""
    before = snapshot(small)
    (scratch / "existing.csv").write_text("kept\n")
    blocker = scratch / "blocker"
    blocker.write_text("a file, not a directory")
    args = [*command, *(w.format(data=small, tmp=scratch) for w in words)]
    if command[0] in WRITERS or command[-1] == "benchmark":
        args += ["--data-dir", str(blocker / "data")]
    elif (
        command != ["variants"] and command[0] != "nosuch" and command[-1] not in ("solve", "tree")
    ):
        args += ["--data-dir", str(small)]
    if command == ["report"]:
        args += ["--out", str(blocker / "report")]  # the checks run, the drawing does not
    if command == ["verify"] and "--variant" not in words:
        args += ["--variant", "six-tiles-one-die"]  # keep each example fast
    result = invoke(args)
    assert result.code in {0, 1, 2, 3}, (args, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, args
    helped = "--help" in words or "Usage:" in result.stderr
    if result.code != 0 and not helped and (result.stderr or result.code != 3):
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, args
    assert snapshot(small) == before, args
    assert not list(small.glob(".*.tmp"))
    if "--force" not in words:
        assert (scratch / "existing.csv").read_text() == "kept\n", args


# -- issue 26: standard output full or closed; numbers of thousands of digits typed in play ------

STDOUT_COMMANDS = [
    ["expect", "123"],
    ["variants"],
    ["query", "top_states", "-f", "csv"],
    ["--help"],
]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=_id)
@pytest.mark.parametrize("where", ["full", "closed"])
def test_stdout_full_or_closed_is_one_line_exit_1(small: Path, args: list[str], where: str) -> None:
    """`> /dev/full` or `>&-`: one `error:` line and exit 1, as for a file that cannot be written
    (not an internal error, nor Python's "Exception ignored" at exit)."""
    data = [] if args == ["variants"] or args == ["--help"] else ["--data-dir", str(small)]
    stdout = open("/dev/full", "w") if where == "full" else subprocess.DEVNULL  # noqa: SIM115
    close_fds = where == "closed"
    before = snapshot(small)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CLOSE_STDOUT if close_fds else RUN_CLI, *args, *data],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    finally:
        if where == "full":
            stdout.close()  # type: ignore[union-attr]
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("error: cannot write to standard output"), proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert snapshot(small) == before


RUN_CLI = "import sys; from pipeline.cli.app import main; sys.argv[0] = 'stb-pipeline'; main()"
#: As `stb-pipeline ... >&-`: file descriptor 1 closed before Python opens sys.stdout.
CLOSE_STDOUT = (
    "import os, sys, subprocess; os.close(1); "
    "sys.exit(subprocess.call([sys.executable, '-m', 'pipeline', *sys.argv[1:]], close_fds=False))"
)


@pytest.mark.parametrize(
    "command", [["play", "--seed", "1"], ["knucklebones", "play", "--seed", "1"]], ids=_id
)
@pytest.mark.parametrize("typed", [HUGER, "²", "-" + HUGER, "1e99999"], ids=lambda t: t[:8])
def test_play_takes_any_line_typed(
    small: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], typed: str
) -> None:
    """A number of thousands of digits (beyond int()'s limit), a superscript digit: asked again,
    then the end of input stops the game; never an internal error."""
    monkeypatch.setattr("sys.stdin", io.StringIO(typed + "\n"))
    data = ["--data-dir", str(small)] if command[0] == "play" else []
    result = invoke([*command, *data])
    assert result.code == 0, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "stopped" in result.stdout


# -- issue 26: a shared table that no longer matches the manifest --------------------------------


def emptied(path: Path) -> None:
    """The table with its columns and no rows."""
    import polars as pl

    pl.read_parquet(path).head(0).write_parquet(path)


def cut(path: Path) -> None:
    """A readable table holding only the rows of one variant."""
    import polars as pl

    rows = pl.read_parquet(path)
    rows.filter(pl.col("variant") == rows["variant"].max()).write_parquet(path)


def missing(path: Path) -> None:
    """The table removed."""
    path.unlink()


@pytest.mark.parametrize("damage", [emptied, cut, missing], ids=lambda f: f.__name__)
@pytest.mark.parametrize("table", ["states", "edges"])
def test_a_changed_shared_table_is_refused_or_rebuilt_whole(
    small: Path, tmp_path: Path, damage, table: str
) -> None:  # type: ignore[no-untyped-def]
    """A build of one variant into a data dir whose shared table was emptied, cut to one
    variant's rows or removed would keep only what is left of the others: it says so and
    refuses; `build --force` rebuilds every variant the table held, so no rows are lost."""
    import polars as pl

    data = tmp_path / "data"
    shutil.copytree(small, data)
    damage(data / f"{table}.parquet")
    before = snapshot(data)
    for command in ("build", "solve"):
        result = invoke([command, "--variant", "classic", "--data-dir", data])
        assert_one_clean_line(result, 1)
        assert f"{table}.parquet" in result.stderr
        assert "two-player" in result.stderr and "stb-pipeline build --force" in result.stderr
        assert snapshot(data) == before
    # -q: on a busy machine the build passes 2 s and its progress lines come first
    result = invoke(["build", "--variant", "classic", "--force", "-q", "--data-dir", data])
    assert result.code == 0, result.stderr
    held = pl.read_parquet(data / f"{table}.parquet")["variant"].unique().sort().to_list()
    assert held == ["classic", "six-tiles-one-die", "two-player"]
    assert invoke(["verify", "--data-dir", data]).code == 0


# -- issue 26: temporary files of a killed build never stay unseen -----------------------------


def _leave_stale(data: Path) -> list[Path]:
    """Temporary files as a build killed with SIGKILL leaves them (a pid above any pid_max)."""
    own = data / "variants" / "gone"
    own.mkdir(parents=True, exist_ok=True)
    stale = [data / ".states.parquet.999999999.tmp", own / ".policy.parquet.999999998.tmp"]
    for path in stale:
        path.write_bytes(b"half a table")
    return stale


def test_verify_reports_a_killed_builds_temporary_files_and_fix_removes_them(
    small: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(small, data)
    stale = _leave_stale(data)
    result = invoke(["verify", "--variant", "classic", "--data-dir", data])
    assert_one_clean_line(result, 3)
    assert "no temporary files" in result.stderr and "verify --fix" in result.stderr
    assert ".states.parquet.999999999.tmp" in result.stdout
    assert all(p.exists() for p in stale), "verify without --fix only reports"
    fixed = invoke(["verify", "--variant", "classic", "--fix", "--data-dir", data])
    assert fixed.code == 0, fixed.stderr
    assert not any(p.exists() for p in stale)


@pytest.mark.parametrize(
    "args",
    [["expect", "123"], ["move", "123", "4"], ["query", "top_states"], ["verify", "--fix"]],
    ids=_id,
)
def test_any_command_reading_the_tables_removes_stale_temporary_files(
    small: Path, tmp_path: Path, args: list[str]
) -> None:
    data = tmp_path / "data"
    shutil.copytree(small, data)
    stale = _leave_stale(data)
    result = invoke([*args, "--data-dir", data])
    assert result.code == 0, result.stderr
    assert not any(p.exists() for p in stale)


@pytest.mark.parametrize(
    "args",
    [
        ["query", "top_states", "--quiet"],
        ["verify", "--variant", "classic", "-q"],
        ["explore", "--variant", "classic", "-o", "{tmp}/page.html", "--quiet"],
    ],
    ids=_id,
)
def test_readers_take_quiet_like_build(small: Path, tmp_path: Path, args: list[str]) -> None:
    result = invoke([*(a.format(tmp=tmp_path) for a in args), "--data-dir", small])
    assert result.code == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "echoed"),
    [
        (["expect", "--variant", ":x:", "123", *DATA], "unknown variant ':x:'"),
        (["query", ":smile:", *DATA], "query ':smile:' is not a query name"),
        (["export", "dataset", "-o", "/proc/:fire:", *DATA], "/proc/:fire:"),
        (["query", "[bold]x[/bold]", *DATA], "query '[bold]x[/bold]'"),
    ],
    ids=_id,
)
def test_error_lines_echo_the_input_as_given(small: Path, args: list[str], echoed: str) -> None:
    """Issue 41: no emoji code (``:x:``) and no markup is read in what a user typed."""
    result = invoke([a.format(data=small) for a in args])
    assert_one_clean_line(result, result.code)
    assert result.code in (1, 2) and echoed in result.stderr, result.stderr
