"""The `ShutTheBox` command of seed 002_966add8e0a53f14d.txt: its seven examples and bad input."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from pipeline.apps.course import command as shutthebox
from tests.conftest import REPO

SEED = "002_966add8e0a53f14d.txt"

# The seven examples of seed 002_966add8e0a53f14d.txt, verbatim: arguments and expected output.
SEED_EXAMPLES = [
    ("--one --expect 123456789", "0.502810"),
    ("--one --expect 146789", "0.256254"),
    ("--one --move 146789 9", "[9]"),
    ("--two --expect 123456789 8", "0.381212"),
    ("--two --expect 12345689 41", "1.000000"),
    ("--two --expect 13456789 43", "0.986111"),
    ("--two --move 13456789 17 12", "[3, 9]"),
]


def call(args: list[str], data_dir: Path) -> tuple[int, str, str]:
    """Run ShutTheBox in this process with STB_DATA_DIR set; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("STB_DATA_DIR")
    os.environ["STB_DATA_DIR"] = str(data_dir)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = shutthebox.main(args)
    finally:
        if old is None:
            del os.environ["STB_DATA_DIR"]
        else:
            os.environ["STB_DATA_DIR"] = old
    return code, out.getvalue(), err.getvalue()


def same_output(got: str, expected: str) -> None:
    """Seed output equality: values as floats to the 6 printed digits, moves as lists."""
    assert got.endswith("\n") and got.count("\n") == 1
    got = got.strip()
    if expected.startswith("["):
        assert got == expected  # the seed's exact move format, "[3, 9]"
    else:
        assert re.fullmatch(r"\d\.\d{6}", got), got
        assert float(got) == pytest.approx(float(expected), abs=5e-7)


@pytest.mark.parametrize(("args", "expected"), SEED_EXAMPLES)
def test_seed_002_examples_solved_on_the_spot(args: str, expected: str, tmp_path: Path) -> None:
    """Seed 002_966add8e0a53f14d.txt's examples with no tables: solved on the spot."""
    code, out, err = call(args.split(), tmp_path)
    assert code == 0, err
    assert err == ""
    same_output(out, expected)


@pytest.mark.parametrize(("args", "expected"), SEED_EXAMPLES)
def test_seed_002_examples_from_tables(args: str, expected: str, built: Path, monkeypatch) -> None:
    """Seed 002_966add8e0a53f14d.txt's examples answered from the built tables."""

    def no_solving(*_args, **_kwargs):
        raise AssertionError("should have read the tables")

    monkeypatch.setattr(shutthebox, "SolvedSource", no_solving)
    code, out, err = call(args.split(), built)
    assert code == 0, err
    same_output(out, expected)


def run_script(args: list[str], data_dir: Path) -> subprocess.CompletedProcess:
    """The real command line: python -m pipeline.apps.course.command ARGS."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.apps.course.command", *args],
        cwd=REPO,
        env={**os.environ, "STB_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(("args", "expected"), [SEED_EXAMPLES[3], SEED_EXAMPLES[6]])
def test_seed_002_examples_as_a_subprocess(args: str, expected: str, tmp_path: Path) -> None:
    """Seed 002_966add8e0a53f14d.txt, as a separate process (the rest run in-process)."""
    done = run_script(args.split(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    same_output(done.stdout, expected)


def test_bad_arguments_as_a_subprocess(tmp_path: Path) -> None:
    done = run_script(["--two", "--expect", "123456789"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[1].startswith("usage: ShutTheBox (--one | --two)")


def test_stale_tables_are_not_used(built: Path, tmp_path: Path) -> None:
    """Tables of other rules (custom options) are ignored: the game is solved instead."""
    code, out, _ = call(["--one", "--expect", "1234", "--tiles", "4"], built)
    assert code == 0
    code_small, out_small, _ = call(["--one", "--expect", "1234", "--tiles", "4"], tmp_path)
    assert (code_small, out_small) == (0, out)


def test_damaged_tables_fall_back_to_solving(built: Path, tmp_path: Path, monkeypatch) -> None:
    """Unreadable tables do not stop an answer: the game is solved instead."""
    for name in ("states", "policy"):
        (tmp_path / f"{name}.parquet").write_bytes((built / f"{name}.parquet").read_bytes())
    (tmp_path / "policy.parquet").write_bytes(b"PAR1 not really parquet")
    code, out, _ = call(["--two", "--move", "13456789", "17", "12"], tmp_path)
    assert (code, out) == (0, "[3, 9]\n")

    def unreadable(*_args):
        raise shutthebox.TableUnreadable("damaged")

    monkeypatch.setattr(shutthebox.TableSource, "_answer", unreadable)
    code, out, _ = call(["--two", "--expect", "123456789", "8"], built)
    assert code == 0 and float(out) == pytest.approx(0.381212, abs=5e-7)


def test_generalised_rules_match_the_game_module() -> None:
    """--tiles/--dice/--sides/--one-die-sum reach the same rules as TwoPlayerRules."""
    from pipeline.games.nplayer.game import NPlayer as TwoPlayer
    from pipeline.games.nplayer.rules import NPlayerRules as TwoPlayerRules
    from pipeline.solve.rank_order import solve_rank_order

    game = TwoPlayer(TwoPlayerRules.make(tiles=5, dice=3, sides=4, one_die_sum=4))
    g = game.graph()
    value = solve_rank_order(g).value[game.full]
    code, out, _ = call(
        [
            "--one",
            "--expect",
            "12345",
            "--tiles",
            "5",
            "--dice=3",
            "--sides",
            "4",
            "--one-die-sum",
            "4",
        ],
        Path("/nonexistent"),
    )
    assert code == 0 and out == f"{value:.6f}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of --one or --two"),
        (["--one", "--two", "--expect", "123"], "exactly one of --one or --two"),
        (["--one", "123"], "exactly one of --expect or --move"),
        (["--one", "--expect"], "--one --expect takes TILES"),
        (["--one", "--expect", "123", "4"], "--one --expect takes TILES"),
        (["--two", "--expect", "123"], "--two --expect takes TILES P1SCORE"),
        (["--two", "--move", "123", "5"], "--two --move takes TILES P1SCORE ROLL"),
        (["--one", "--move", "123", "x"], "ROLL must be an integer"),
        (["--two", "--expect", "123", "8.5"], "P1SCORE must be an integer"),
        (["--one", "--expect", "1230"], "tile 0 is not in this box"),
        (["--one", "--expect", "12a"], "not a tile number"),
        (["--two", "--expect", "123", "44"], "cannot finish a turn with score 44"),
        (["--two", "--expect", "123", "0"], "must be positive"),
        (["--one", "--move", "123456789", "1"], "roll 1 is impossible"),
        (["--one", "--move", "12", "13"], "roll 13 is impossible"),
        (["--one", "--move", "1", "3"], "no open tiles make 3"),
        (["--two", "--move", "1", "41", "3"], "the game is over"),
        (["--one", "--expect", "123", "--tiles"], "--tiles needs a number"),
        (["--one", "--expect", "123", "--tiles", "13"], "between 1 and 12"),
        (["--one", "--expect", "123", "--sides", "x"], "--sides must be an integer"),
        (["--one", "--expect", "123", "--verbose"], "unknown option --verbose"),
        (["--one", "--one", "--expect", "123"], "--one is given twice"),
    ],
)
def test_bad_arguments(args: list[str], message: str, tmp_path: Path) -> None:
    code, out, err = call(args, tmp_path)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("ShutTheBox: error: ") and message in lines[0]
    assert lines[1].startswith("usage: ShutTheBox ")
    assert len(lines) == 2


def test_bad_arguments_from_tables_too(built: Path) -> None:
    code, out, err = call(["--two", "--move", "13456789", "17", "1"], built)
    assert code == 2 and out == "" and "roll 1 is impossible" in err


def test_help(tmp_path: Path) -> None:
    code, out, _ = call(["--help"], tmp_path)
    assert code == 0 and "--two --move TILES P1SCORE ROLL" in out


def test_console_script_is_declared() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'ShutTheBox = "pipeline.apps.course.command:entry"' in text
