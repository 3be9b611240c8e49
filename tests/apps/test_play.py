"""The teaching game: seeded rolls, ranked choices, mistakes totalled, stdin-driven, clean EOF."""

from __future__ import annotations

import io
import math
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

from pipeline import api
from pipeline.apps import teaching_game as play
from pipeline.games.registry import get_variant
from pipeline.games.rule_options import variant_from_options


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def scripted(answers: list[int | str]) -> play.Ask:
    """An asker that picks from a list: an int is a choice (clamped to n), "last" the worst."""
    queue = list(answers)

    def ask(prompt: str, n: int) -> int | None:
        if not queue:
            return None
        a = queue.pop(0)
        return n if a == "last" else min(int(a), n)

    return ask


@pytest.fixture(scope="module")
def classic(built: Path) -> play.Coach:
    return play.Coach(built, get_variant("classic"))


def test_best_choices_make_no_mistakes_and_the_seed_replays(classic: play.Coach) -> None:
    first = play.play_game(classic, scripted([1] * 20), quiet(), seed=11)
    again = play.play_game(classic, scripted([1] * 20), quiet(), seed=11)
    assert first.finished and first.mistakes == [] and first.given_away == 0.0
    assert first.rolls == again.rolls and first.final_tiles == again.final_tiles
    assert first.seed == 11
    other = [play.play_game(classic, scripted([1] * 20), quiet(), seed=s).rolls for s in (1, 2, 3)]
    assert len({tuple(r) for r in other}) > 1, "different seeds give different games"


def test_each_mistake_costs_what_the_moves_table_says(classic: play.Coach, built: Path) -> None:
    seen = 0
    for seed in range(6):
        record = play.play_game(classic, scripted(["last"] * 20), quiet(), seed=seed)
        for m in record.mistakes:
            table = api.move_values("classic", m.tiles, int(m.situation.split()[1]), data_dir=built)
            best = table.filter(pl.col("is_best"))
            chosen = table.filter(
                pl.col("move").list.eval(pl.element().cast(pl.String)).list.join(" ") == m.chosen
            )
            assert chosen.height == 1
            assert math.isclose(chosen["regret"][0], m.lost, rel_tol=1e-12, abs_tol=1e-15)
            assert " ".join(str(t) for t in best["move"][0]) == m.best
            seen += 1
        assert math.isclose(record.given_away, math.fsum(m.lost for m in record.mistakes))
    assert seen > 0, "taking the worst move must make mistakes"


def test_dice_choice_values_agree_with_the_solver(cli, tmp_path: Path) -> None:
    # One die is optional everywhere in this small custom rule set, so every turn has a choice.
    rules = ["--tiles", "5", "--one-die", "optional"]
    assert cli(["build", *rules, "-d", tmp_path]).code == 0
    variant = variant_from_options({"tiles": 5, "one_die": "optional"})
    assert variant is not None
    coach = play.Coach(tmp_path, variant)
    for state_id in range(1, 1 << 5):
        info = coach.info(state_id)
        if info["terminal"]:
            continue
        options = coach.dice_options(state_id)
        assert [o.dice for o in options if o.is_best] == [info["dice"]]
        assert len(options) == 2
        # The best option's value recomputed from policy and dice odds is the solved value.
        assert math.isclose(options[0].value, info["value"], rel_tol=1e-12, abs_tol=1e-15)
        assert all(o.loses >= 0 for o in options)
    # Rolling one die from the full box is a mistake worth exactly the gap between the choices.
    start = coach.dice_options(coach.start)
    assert start[0].dice == 2 and start[1].loses > 0
    record = play.play_game(coach, scripted(["last"] + [1] * 10), quiet(), seed=4)
    first = record.mistakes[0]
    assert (first.turn, first.situation, first.chosen) == (1, "before rolling", "one die")
    assert math.isclose(first.lost, start[0].value - start[1].value, rel_tol=1e-12)


def test_play_from_stdin(cli, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n9\n" + "1\n" * 20))
    result = cli(["play", "--variant", "classic", "--seed", "7", "-d", built])
    assert result.code == 0, result.stderr
    assert "seed 7" in result.stdout
    assert "Type a number from 1 to" in result.stdout, "bad answers are asked again"
    assert "You roll 6 + 4 = 10" in result.stdout  # the first roll of seed 7
    assert "Traceback" not in result.stderr


def test_play_ends_cleanly_at_end_of_input(cli, built: Path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    result = cli(["play", "--variant", "lever", "--seed", "1", "-d", built])
    assert result.code == 0, result.stderr
    assert "end of input" in result.stdout and "stopped before the end" in result.stdout


def test_play_reports_mistakes_at_the_end(cli, built: Path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("2\n1\n3\n1\n1\n1\n"))
    result = cli(["play", "--seed", "7", "-d", built])
    assert result.code == 0, result.stderr
    assert "Your mistakes" in result.stdout and "In all you gave away" in result.stdout


def test_play_quiz_hides_values(cli, built: Path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n"))
    result = cli(["play", "--seed", "7", "--quiz", "-d", built])
    assert result.code == 0, result.stderr
    before, after = result.stdout.split("Which move")[0:2]
    listed = before.split("Turn 1")[1]
    assert "value" not in listed and "1 9" in listed
    assert listed.index("1 2 3 4") < listed.index("1 9"), "quiz lists moves by tiles, not value"
    assert "value" in after, "the ranking is revealed after the pick"


@pytest.mark.parametrize(
    "args",
    [["--variant", "nope"], ["--variant", "twelve-tiles", "-d", "{empty}"]],
)
def test_play_bad_input_is_one_line(cli, tmp_path: Path, args: list[str]) -> None:
    result = cli(["play", *[a.replace("{empty}", str(tmp_path)) for a in args]])
    assert result.code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def two_player(built: Path) -> play.Coach:
    """The two-player game (issue 3), when this tree has it."""
    from pipeline.games.registry import REGISTRY

    if "two-player" not in REGISTRY:
        pytest.skip("the two-player variant is not registered in this tree (issue 3)")
    return play.Coach(built, get_variant("two-player"))


@pytest.mark.parametrize("seat", [1, 2])
def test_two_player_game_against_the_solver(two_player: play.Coach, seat: int) -> None:
    outcomes = set()
    for seed in range(8):
        record = play.play_game(two_player, scripted([1] * 40), quiet(), seed=seed, seat=seat)
        assert record.finished and record.mistakes == []
        assert "Player" in record.outcome or "tie" in record.outcome
        outcomes.add("you win" in record.outcome)
    assert outcomes == {True, False}, "over eight games both sides win sometimes"
    start = two_player.info(two_player.start)["value"]
    record = play.play_game(two_player, scripted([1] * 40), quiet(), seed=0, seat=seat)
    want = start if seat == 1 else 1 - start
    assert math.isclose(record.start_value, want, rel_tol=1e-12)


def test_player_one_stuck_hands_over_to_player_two(two_player: play.Coach, built: Path) -> None:
    """Every state where a roll leaves the mover stuck (the policy's stuck rows): player 1
    hands over to player 2's full box facing player 1's score; player 2 stuck ends the game."""
    from tests.support import tables

    stuck = {r["state_id"] for r in tables.rows(built, "policy", "two-player", "stuck")}
    checked = 0
    for state_id in sorted(stuck):
        info = two_player.info(state_id)
        after = two_player.after_stuck(state_id)
        if info["player"] == 2:
            assert after is None, "player 2 stuck ends the game"
            continue
        assert after is not None
        p2 = two_player.info(after)
        assert p2["player"] == 2 and p2["p1_score"] == info["open_sum"]
        assert p2["tiles"] == two_player.info(two_player.start)["tiles"]
        checked += 1
    assert checked > 100


def test_a_bad_seat_is_refused_before_any_table_is_read(cli, tmp_path: Path) -> None:
    """`play` checks its arguments first: a seat the game does not have is refused even where
    nothing is built (the tables would be read only for the first prompt)."""
    four = cli(["play", "--variant", "four-player", "--seat", "5", "-d", tmp_path])
    assert four.code == 2 and "has seats 1..4" in four.stderr, four.stderr
    one = cli(["play", "--variant", "classic", "--seat", "2", "-d", tmp_path])
    assert one.code == 2 and "one-player games have seat 1 only" in one.stderr
    assert not list(tmp_path.iterdir()), "nothing was read or written"


def test_the_coach_reads_nothing_until_asked(built: Path) -> None:
    """Making a coach reads no table (so `play` prompts at once); the first question reads
    the variant's values once, and every later one answers from memory."""
    from pipeline.answer.answers import Answers

    answers = Answers(built)
    coach = play.Coach(built, get_variant("two-player"), answers)
    assert answers.index.reads == 0 and answers.index.held() == []
    assert coach.dice_options(coach.start)[0].is_best
    assert answers.index.reads == 1 and answers.index.held() == ["two-player"]
    record = play.play_game(coach, scripted([1] * 40), quiet(), seed=3, seat=2)
    assert record.finished
    assert answers.index.reads == 1  # the values alone (a pass is worth a state's share)
