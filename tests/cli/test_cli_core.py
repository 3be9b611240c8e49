"""The core commands as a user runs them: answers, summaries, help, and bad input."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline
from pipeline.cli.app import app
from pipeline.errors import TablesMissingError, UsageError
from pipeline.games.shutbox.game import RuleSet, parse_tiles


def test_expect_prints_the_value(built: Path, cli) -> None:
    result = cli(["expect", "--variant", "classic", "123456789", "-d", built])
    assert result.code == 0, result.stderr
    # seed 000_9b8fddd618491a4c.txt: 7.143 %; exactly 466473281/6530347008
    assert float(result.stdout) == pytest.approx(466473281 / 6530347008, abs=1e-12)


def test_expect_lever_matches_seed_003(built: Path, cli) -> None:
    result = cli(["expect", "--variant", "lever", "123456789", "-d", built])
    assert float(result.stdout) == pytest.approx(0.0976137161704, abs=5e-14)  # seed 003


def test_move_prints_best_and_what_others_lose(built: Path, cli) -> None:
    result = cli(["move", "--variant", "classic", "12345", "7", "-d", built])
    assert result.code == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first.startswith("best move [3, 4]")
    # seed 000: P({1,2,5}) = 15.895 % after shutting 3 and 4
    assert float(first.split("value")[1]) == pytest.approx(0.15895061728395063, abs=1e-12)
    table = "\n".join(rest)
    assert "[2, 5]" in table and "[1, 2, 4]" in table


def test_move_when_stuck_says_the_game_ends(built: Path, cli) -> None:
    result = cli(["move", "--variant", "classic", "9", "2", "-d", built])
    assert result.code == 0
    assert "no legal move" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["expect", "12a"], "not a tile number"),
        (["expect", "0123"], "tile 0 is not in this box"),
        (["expect", "1123"], "listed twice"),
        (["expect", "1234567890"], "tile 0 is not in this box"),
        (["expect", ""], "no open tiles"),
        (["expect", "--variant", "six-tiles-one-die", "7"], "tile 7 is not in this box"),
        (["move", "12345", "13"], "roll 13 is impossible"),
        (["move", "12345", "1"], "roll 1 is impossible"),
        (["move", "12345", "0"], "roll 0 is impossible"),
        (["move", "12345", "--", "-3"], "roll -3 is impossible"),
        (["expect", "--variant", "nope", "123"], "unknown variant 'nope'"),
        (["expect", "--variant", "all", "123"], "name one variant"),
        (["expect", "--p1-score", "8", "123"], "two-player"),
        (["move", "12345"], "Missing argument"),
        (["move", "12345", "seven"], "Invalid value for 'roll'"),
        (["build", "--tiles", "0"], "tiles must be between"),
        (["build", "--dice", "0"], "dice must be between"),
        (["build", "--sides", "1"], "sides must be between"),
        (["build", "--tiles", "30"], "tiles must be between"),
        (["build", "--tiles", "14"], "can never be shut"),
        (["build", "--one-die", "sometimes"], "one-die rule must be"),
        (["build", "--one-die", "forced"], "just --dice 1"),
        (["build", "--objective", "target"], "target score goes with"),
        (["build", "--one-die-shut", "7x"], "give tiles"),
        (["edges", "--exact"], "No such option: --exact"),
        (["build", "--variant", "lever", "--tiles", "10"], "not both"),
    ],
)
def test_bad_input_gets_one_line_and_exit_2(
    built: Path, cli, args: list[str], message: str
) -> None:
    before = {p.name: p.read_bytes() for p in built.glob("*.parquet")}
    result = cli([*args[:1], "-d", built, *args[1:]])
    assert result.code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr
    assert {p.name: p.read_bytes() for p in built.glob("*.parquet")} == before


def test_tables_not_built_is_a_clear_error(tmp_path: Path, cli) -> None:
    result = cli(["expect", "123", "-d", tmp_path])
    assert result.code == 2
    assert "stb-pipeline build" in result.stderr and len(result.stderr.splitlines()) == 1


def test_custom_rules_build_and_answer(tmp_path: Path, cli) -> None:
    args = ["--tiles", "10", "--one-die", "forced", "--one-die-sum", "6", "-d", tmp_path]
    built = cli(["build", *args])
    assert built.code == 0, built.stderr
    assert "stb-10t-2d6-1dforced-le6-shut" in built.stdout
    answer = cli(["expect", *args, "1,2,10"])
    assert answer.code == 0, answer.stderr
    assert 0.0 < float(answer.stdout) < 1.0
    assert cli(["expect", *args, "1210"]).code == 2  # ambiguous above 9 tiles


def test_readme_custom_rules_example(tmp_path: Path, cli) -> None:
    opts = ["--tiles", "12", "--dice", "3", "--sides", "6", "--one-die", "forced"]
    assert cli(["build", *opts, "--one-die-sum", "6", "-d", tmp_path]).code == 0
    answer = cli(
        [
            "expect",
            *opts[:4],
            "--one-die",
            "forced",
            "--one-die-sum",
            "6",
            "-d",
            tmp_path,
            "1,2,10,12",
        ]
    )
    assert answer.code == 0, answer.stderr


def test_rule_set_slug_is_deterministic() -> None:
    rules = RuleSet(tiles=12, dice=3, one_die="forced", one_die_sum=6)
    assert rules.slug() == "stb-12t-3d6-1dforced-le6-shut"
    assert RuleSet(one_die="optional", one_die_shut=(9, 8, 7)).one_die_shut == (7, 8, 9)


def test_parse_tiles_accepts_separators_and_any_order() -> None:
    assert parse_tiles("1245", 9) == parse_tiles("5,4,2,1", 9) == 0b11011
    assert parse_tiles("1 2 10", 12) == (1 | 2 | 512)
    with pytest.raises(UsageError):
        parse_tiles("12", 12)


def test_every_command_has_a_summary_and_an_example(cli) -> None:
    top = cli(["--help"])
    assert top.code == 0 and "Example:" in top.stdout
    for command in app.registered_commands:
        name = command.name or command.callback.__name__
        doc = command.callback.__doc__ or ""
        assert doc.strip().splitlines()[0], name
        examples = [line for line in doc.splitlines() if line.strip().startswith("Example:")]
        assert examples and f"stb-pipeline {name}" in examples[0], name
        assert cli([name, "--help"]).code == 0


def test_console_script_and_duckdb_cli_work_together(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pipeline", "build", "--variant", "classic", "-d", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    duckdb_cli = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    query = f"select count(*) from '{tmp_path}/policy.parquet' where not stuck"
    out = subprocess.run(
        [duckdb_cli, "-csv", "-c", query], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "4040"  # seed 000


def test_from_another_directory_not_built_names_the_data_dir_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """Issue 41: run from a directory without `data/`, `expect` said to build and never
    named --data-dir or STB_DATA_DIR, and `query` showed DuckDB's raw "Catalog Error"."""
    monkeypatch.chdir(tmp_path)
    expect = cli(["expect", "--variant", "classic", "123456789"])
    assert expect.code == 2 and expect.stderr.count("\n") == 1
    assert "--data-dir DIR, or STB_DATA_DIR=DIR" in expect.stderr
    query = cli(["query", "best_opening_roll"])
    assert query.code == 2 and query.stderr.count("\n") == 1
    assert "Catalog Error" not in query.stderr and "does not exist!" not in query.stderr
    assert "query best_opening_roll reads policy, which is not built in data" in query.stderr
    assert "--data-dir DIR" in query.stderr


def test_the_data_dir_hint_comes_first_from_the_cli_and_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """Issue 48: the hint came at the end of a 330-character line, and the Python API's error
    gave none."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STB_DATA_DIR", raising=False)
    lead = f"{tmp_path / 'data'} holds no tables (built in another folder? "
    expect = cli(["expect", "--variant", "classic", "123456789"])
    assert expect.stderr.startswith(f"error: {lead}--data-dir DIR"), expect.stderr
    with pytest.raises(TablesMissingError) as raised:
        pipeline.expect("classic", "123456789")
    assert str(raised.value).startswith(f"{lead}data_dir=DIR"), raised.value
    with pytest.raises(TablesMissingError, match="data_dir=DIR"):
        pipeline.load_table("states", "classic", data_dir="elsewhere")


def test_a_data_dir_with_tables_gets_no_data_dir_hint(built: Path, cli) -> None:
    missing = cli(["expect", "--variant", "classic-score", "123", "-d", built])
    assert missing.code in (0, 2)
    assert "STB_DATA_DIR" not in missing.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["expect", "--variant", "clasic", "123"],
            "unknown variant 'clasic'; did you mean classic?",
        ),
        (["build", "-v", "levr", "-q"], "did you mean lever?"),
        (["build", "--variant", "classic", "lever"], "--variant classic,lever"),
    ],
)
def test_a_misspelt_variant_gets_a_guess_and_a_space_gets_the_comma(
    tmp_path: Path, cli, args: list[str], said: str
) -> None:
    """Issue 41: `--variant clasic` listed 25 names in one 560-character line; `--variant
    classic lever` got no hint that several variants take commas."""
    result = cli([*args, "-d", tmp_path / "data"])
    assert result.code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert said in result.stderr and len(result.stderr) < 200, result.stderr


def test_the_strategy_card_reads_as_a_card(built: Path, cli) -> None:
    """Issue 41: `query strategy_card` printed 13 rows as 200 lines of key/value tables; the
    card shows place, the line, the rule in words, P(shut) and the gap, every column with csv."""
    result = cli(["query", "strategy_card", "--variant", "classic", "-d", built])
    assert result.code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "place" in line)
    assert [w for w in header.split() if w.isidentifier()] == [
        "place",
        "line",
        "rule",
        "p_shut",
        "gap",
    ]
    assert "Shut as few tiles as you can" in result.stdout
    assert "every column (spec, size, exceptions, value, expected_score too)" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 160
    assert len(result.stdout.splitlines()) < 40
    full = cli(["query", "strategy_card", "--variant", "classic", "-f", "csv", "-d", built])
    assert full.stdout.splitlines()[0] == (
        "place,line,rule,spec,size,exceptions,value,gap,p_shut,expected_score"
    )


def test_strategies_prints_the_best_rule_and_the_command_for_the_card(
    built: Path, tmp_path: Path, cli
) -> None:
    """Issue 41: `strategies --variant lever` printed a build summary, not what it found."""
    data = tmp_path / "data"
    assert cli(["build", "--variant", "lever", "-d", data, "-q"]).code == 0
    result = cli(["strategies", "--variant", "lever", "-d", data, "-q"])
    assert result.code == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith("lever: best rule of at most 3 keys: Shut as few tiles as you can")
    assert "P(shut) 0.0965" in first and "less than optimal play" in first
    assert second.strip() == f"the card: stb-pipeline query strategy_card --variant lever -d {data}"


def test_strategies_without_a_variant_searches_the_boxes_built(tmp_path: Path, cli) -> None:
    """Issue 48: `strategies` with its default (all) failed on two-player, a game it cannot
    search; now it searches every one-player box built in the data directory."""
    data = tmp_path / "data"
    assert cli(["build", "-v", "six-tiles-one-die,two-player", "-q", "-d", data]).code == 0
    found = cli(["strategies", "-q", "-d", data])
    assert found.code == 0, found.stderr
    assert found.stdout.startswith("six-tiles-one-die: best rule of at most 3 keys")
    assert "two-player" not in found.stdout
    named = cli(["strategies", "-v", "two-player", "-d", data])
    assert named.code == 2 and "no such rules to search" in named.stderr
    empty = cli(["strategies", "-d", tmp_path / "none"])
    assert empty.code == 2 and "no one-player box is built" in empty.stderr
