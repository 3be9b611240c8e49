"""`play --rule`: the coach says what a rule plays and where its exceptions are (issue 32)."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from pipeline.apps import rule_coach
from pipeline.errors import UsageError
from pipeline.games.registry import get_variant
from pipeline.store import tables


@pytest.fixture(scope="module")
def classic(built: Path) -> rule_coach.RuleCoach:
    return rule_coach.rule_coach(built, get_variant("classic"), "best")


def test_best_is_the_searched_best_rule_and_knows_its_exceptions(
    classic: rule_coach.RuleCoach, built: Path
) -> None:
    curve = tables.read_table(built, "strategy_exceptions", "classic").filter(
        pl.col("objective") == "shut"
    )
    assert classic.rule.spec == curve["spec"][0]
    assert classic.count == curve["n"].max() == 50
    last: dict[tuple[int, int], dict] = {}
    for row in curve.filter(pl.col("n") > 0).iter_rows(named=True):
        last[(row["state_id"], row["roll"])] = row  # a later exception replaces an earlier one
    for (state, roll), row in last.items():
        said = classic.advice(state, roll)
        move = " ".join(str(t) for t in row["move"])
        assert said is not None and f"here the exception (#{row['n']} of 50) is {move}." in said


def test_the_rule_alone_where_it_has_no_exception(classic: rule_coach.RuleCoach) -> None:
    # full box, roll 10: "shut as few tiles as you can; then bring your highest open tile as
    # low as you can" leaves 2..8 after shutting 1 and 9
    said = classic.advice(511, 10)
    assert said == f"The rule (best: {classic.rule.spec}) says 1 9."
    assert classic.advice(511, 2) is None  # only one move: nothing to choose
    assert classic.advice(511, None) is None  # classic always rolls two dice


def test_named_rules_keys_and_dice(built: Path) -> None:
    greedy = rule_coach.rule_coach(built, get_variant("classic"), "greedy")
    assert greedy.rule.spec == "max-high,min-count"
    assert greedy.advice(511, 12) is not None and "says 3 9" in greedy.advice(511, 12)
    lever = rule_coach.rule_coach(built, get_variant("lever"), "min-count,one-die-le6")
    one_two_four = 0b1011  # tiles 1, 2, 4 open: one die allowed (7, 8, 9 shut), sum 7
    assert lever.advice(one_two_four, None) is not None
    assert "rolls two dice" in str(lever.advice(one_two_four, None))
    assert "rolls one die" in str(lever.advice(0b0111, None))  # 1, 2, 3: sum 6
    keys_only = rule_coach.rule_coach(built, get_variant("lever"), "min-count")
    assert keys_only.rule.spec == "min-count,one-die-never"


@pytest.mark.parametrize(
    ("variant", "name", "message"),
    [
        ("classic", "bogus", "give best, best-1, best-2"),
        ("classic", "best-4", "best-K with K from 1 to 3"),
        ("classic", "max-nothing", "is not a key"),
        ("lever", "best", "stb-pipeline strategies --variant lever"),
        ("two-player", "best", "not one"),
    ],
)
def test_bad_rules_are_refused(built: Path, variant: str, name: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        rule_coach.rule_coach(built, get_variant(variant), name)


def test_play_coaches_from_the_command_line(cli, built: Path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n" * 20))
    got = cli(["play", "--variant", "classic", "--seed", "7", "--rule", "best", "-d", built])
    assert got.code == 0, got.stderr
    assert "The rule (best: min-count,min-top,max-chance) says 1 9." in got.stdout
    bad = cli(["play", "--variant", "two-player", "--rule", "best", "-d", built])
    assert bad.code == 2 and bad.stderr.startswith("error:") and len(bad.stderr.splitlines()) == 1
