"""The strategies stage's tables (issue 32): every value they report is a fresh exact evaluation
of the play it names, and the exceptions curve never goes down and reaches optimal play."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.games.registry import get_variant
from pipeline.games.shutbox import rule_exceptions, rule_keys, rule_search, rule_tables
from pipeline.games.shutbox.rule_family import parse_spec
from pipeline.solve import policy_eval
from pipeline.solve.rank_order import solve_rank_order
from pipeline.store import tables

SEED_000 = "000_9b8fddd618491a4c.txt"  # the Scala simulator: classic, optimal play wins 7.143 %
#: The variants `build --variant all` searches (boxes of at most 9 tiles without a dice choice).
SEARCHED = ["classic", "classic-score", "digital-score", "one-die-6", "one-die-6-max2"]


def box(name: str):  # type: ignore[no-untyped-def]
    """A variant's game, graph, rules view and objectives."""
    game = get_variant(name).make()
    g = game.graph()
    start = int(np.flatnonzero(g.state_id == game.start_state())[0])
    objectives = {o.name: o for o in rule_search.objectives(game, g, solve_rank_order(g), start)}
    return game, g, rule_keys.box_rules(game, g), objectives


def fresh(obj: rule_search.Objective, rows: np.ndarray, choice: np.ndarray) -> float:
    """The value from the start of a play, by the plain backward pass of policy_eval."""
    policy = policy_eval.deterministic(obj.graph, rows, choice)
    return float(policy_eval.evaluate(obj.graph, policy).value[obj.start])


def test_build_searches_the_small_boxes_only(built: Path) -> None:
    search = tables.read_table(built, "strategy_search")
    assert sorted(search["variant"].unique()) == sorted([*SEARCHED, "six-tiles-one-die"])
    curve = tables.read_table(built, "strategy_exceptions")
    assert sorted(curve["variant"].unique()) == sorted(search["variant"].unique())


@pytest.mark.parametrize("name", SEARCHED)
def test_every_reported_value_is_a_fresh_evaluation(built: Path, name: str) -> None:
    game, g, view, objectives = box(name)
    rows = tables.read_table(built, "strategy_search", name)
    score = game.scores(g.state_id)
    for row in rows.filter(pl.col("kind") == "rule").iter_rows(named=True):
        obj = objectives[row["objective"]]
        rule = parse_spec(row["spec"])
        play, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        assert abs(fresh(obj, play, choice) - row["value"]) <= 1e-12 * max(1, abs(row["value"]))
        reach = policy_eval.reach(g, policy_eval.deterministic(g, play, choice), obj.start)
        assert abs(reach.end[score == 0].sum() - row["p_shut"]) <= 1e-12
        assert abs(reach.end @ score - row["expected_score"]) <= 1e-12 * row["expected_score"]
        assert row["gap"] >= 0
    for name_, obj in objectives.items():
        optimal = rows.filter((pl.col("kind") == "optimal") & (pl.col("objective") == name_))
        assert optimal["value"][0] == pytest.approx(obj.optimum, abs=1e-12)


@pytest.mark.parametrize("name", SEARCHED)
def test_every_exception_is_priced_by_a_fresh_evaluation(built: Path, name: str) -> None:
    """Rebuild the play after n exceptions from the table's own rows and evaluate it again."""
    _, g, view, objectives = box(name)
    curve = tables.read_table(built, "strategy_exceptions", name)
    pairs = zip(g.state_id[g.node_state].tolist(), g.node_roll.tolist(), strict=True)
    node_of = {pair: n for n, pair in enumerate(pairs)}
    index_of = {int(sid): i for i, sid in enumerate(g.state_id)}
    for (objective,), part in curve.group_by("objective"):
        obj = objectives[str(objective)]
        part = part.sort("n")
        rule = parse_spec(part["spec"][0])
        play, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        for row in part.iter_rows(named=True):
            if row["n"]:
                state = index_of[row["state_id"]]
                if row["roll"] is None:
                    assert choice[state] == row["instead_of_dice"]
                    choice[state] = row["dice"]
                else:
                    node = node_of[(row["state_id"], row["roll"])]
                    moves = range(*view.starts[node : node + 2])
                    mask = sum(1 << (t - 1) for t in row["move"])
                    before = sum(1 << (t - 1) for t in row["instead_of"])
                    assert int(g.mv_label[play[node]]) == before
                    play[node] = next(m for m in moves if g.mv_label[m] == mask)
            value = fresh(obj, play, choice)
            assert abs(value - row["value"]) <= 1e-12 * max(1, abs(value)), row["n"]
        assert part["n"].to_list() == list(range(part.height))


def test_the_card_of_classic(built: Path) -> None:
    """Classic's card: optimal play first (7.143 %, the Scala simulator, seeds/SEED_000), the best
    rules get better with more keys, and exceptions close the gap."""
    from pipeline.analysis.sql import run_query

    card = run_query("strategy_card", built, variant="classic")
    by_line = {r["line"]: r for r in card.iter_rows(named=True)}
    assert round(100 * by_line["optimal play"]["value"], 3) == 7.143  # SEED_000
    gaps = [
        by_line[f"best rule of at most {k} key{'s' if k > 1 else ''}"]["gap"] for k in (1, 2, 3)
    ]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] > 0
    ten, fifty = by_line["best rule with 10 exceptions"], by_line["best rule with 50 exceptions"]
    assert gaps[-1] > ten["gap"] > fifty["gap"] >= 0
    assert (ten["exceptions"], fifty["exceptions"]) == (10, 50)
    named = card.filter(pl.col("line").str.starts_with("named strategy"))
    bench = tables.read_table(built, "benchmarks", "classic").filter(pl.col("method") == "exact")
    expected = dict(zip(bench["strategy"], bench["win_rate"], strict=True))
    assert named.height == 7  # the eight named strategies but optimal play, the card's first line
    assert card["place"].to_list() == list(range(card.height))  # no gap in the card's order
    for row in named.iter_rows(named=True):
        assert abs(row["value"] - expected[row["spec"]]) <= 1e-12


def test_the_curve_never_goes_down_and_reaches_optimal_play() -> None:
    """Every regret covered, the curve ends at optimal play's value; each step gains (the
    one-die-6-max2 box's curve stalls once: an exception where its play never goes first)."""
    for name in ("classic", "one-die-6-max2"):
        _, _, view, objectives = box(name)
        obj = objectives["shut"]
        found = rule_search.search(view, [obj])
        rule, _ = found.best_within("shut", 3)
        rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        curve = rule_exceptions.curve(obj, rows, choice, n=10_000)
        values = [curve.start_value, *(o.value for o in curve.overrides)]
        assert np.all(np.diff(values) >= 0)
        assert all(o.gain >= 0 for o in curve.overrides)
        assert curve.optimal and abs(values[-1] - obj.optimum) <= 1e-12
        assert len(curve.overrides) < 200  # far fewer than the 1,774 rolls with a choice
        if name == "one-die-6-max2":
            assert any(o.reach == 0 for o in curve.overrides), "the stalled step is exercised"


def test_exceptions_read_as_a_player_says_them() -> None:
    assert (
        rule_tables.words([1, 2, 3, 7], 7, [7], [3, 4])
        == "with 1 2 3 7 open and a roll of 7, shut 7, not 3 4"
    )
    assert rule_tables.words([1, 2, 4], None, None, None, 1, 2) == (
        "with 1 2 4 open, roll one die, not two dice"
    )


def test_strategies_command_searches_what_build_does_not(cli, tmp_path: Path) -> None:
    """`strategies` runs the stage where build does not (a box with one die by choice: every
    one-die threshold is searched), and refuses a variant without rules to search."""
    from pipeline.analysis.sql import run_query

    data = tmp_path / "data"
    box_options = ["--tiles", "6", "--one-die", "optional", "--one-die-sum", "4"]
    name = "stb-6t-2d6-1doptional-le4-shut"
    assert cli(["build", *box_options, "-d", data]).code == 0
    assert cli(["build", "--variant", "two-player", "-d", data]).code == 0
    missing = cli(["query", "strategy_card", "--variant", name, "-d", data])
    assert missing.code == 2 and f"stb-pipeline strategies --variant {name}" in missing.stderr
    assert cli(["strategies", *box_options, "-d", data]).code == 0
    other = cli(["strategies", "--variant", "two-player", "-d", data])
    assert other.code == 2 and "two-player is a game of the nplayer family" in other.stderr
    rules = tables.read_table(data, "strategy_search", name).filter(pl.col("kind") == "rule")
    assert rules["searched"].max() == 4032 * 5  # never, and one die at open sums 1..4
    assert rules["one_die_at_most"].is_not_null().all()
    card = run_query("strategy_card", data, variant=name)
    assert card["line"][0] == "optimal play" and card["gap"].min() == 0


def test_the_contract_holds_and_catches_a_curve_that_gets_worse(
    built: Path, tmp_path: Path
) -> None:
    from tests.support.tables import contract_rows

    assert contract_rows("strategy_search", built).height == 0
    data = tmp_path / "data"
    data.mkdir()
    for name in ("states", "strategy_search", "strategy_exceptions"):
        frame = tables.read_table(built, name, "classic")
        if name == "strategy_exceptions":  # the third exception now loses half the value
            halved = pl.when(pl.col("n") == 3).then(pl.col("value") / 2).otherwise("value")
            frame = frame.with_columns(value=halved)
        frame.write_parquet(data / f"{name}.parquet")
    broken = contract_rows("strategy_search", data)
    assert set(broken["problem"]) == {"the value got worse", "gain is not the change of value"}


def test_a_twin_box_takes_the_last_search_and_gets_the_same_rows() -> None:
    """classic-score is classic's rules for its other objective: after classic, its tables come
    from classic's search, and equal those of a search of its own."""
    from pipeline.games.solved import Solved

    def tables_of(name: str) -> dict[str, pl.DataFrame]:
        variant = get_variant(name)
        game = variant.make()
        return rule_tables.build_tables(Solved(variant, game, game.graph()))

    rule_tables._LAST.clear()
    alone = tables_of("classic-score")
    rule_tables._LAST.clear()
    tables_of("classic")
    twin = tables_of("classic-score")
    assert next(iter(rule_tables._LAST.values())).box.r.objective == "shut"  # classic's search
    for name, frame in alone.items():
        assert frame["objective"][0] == "score"
        assert frame.equals(twin[name]), name
