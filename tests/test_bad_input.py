"""Bad input of every kind: one clear line on stderr, a documented exit code (README "Exit codes"),
never a traceback, and the tables already written stay exactly as they were."""

from __future__ import annotations

import hashlib
import shutil
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
    result = invoke(["build", "--variant", "classic,six-tiles-one-die", "--data-dir", data])
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


@pytest.mark.parametrize("damage", [truncated, foreign, text], ids=lambda f: f.__name__)
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
        ["build", "--variant", "classic", "--force"],
        [writer, "--variant", "six-tiles-one-die"],
        ["verify"],
    ]
    if table in ("states", "policy", "moves"):
        commands.append(["move", "12345", "7"])
    for args in commands:
        result = invoke([*args, "--data-dir", data])
        assert_one_clean_line(result, 1)
        assert f"{table}.parquet" in result.stderr
        assert snapshot(data) == before, args


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
    if rules.objective != "score":
        assert rules.tiles <= rules.dice * rules.sides  # every tile can be shut by some roll


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
    result = invoke(["build", "--variant", "classic", "--force", "--data-dir", data])
    assert_one_clean_line(result, 130)
    assert snapshot(data) == before
