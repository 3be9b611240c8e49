"""The two-player variant's tables (seed 002_966add8e0a53f14d.txt) and the commands reading them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.analysis.sql import run_query
from pipeline.store import tables
from tests.support.tables import contract_rows

SEED = "002_966add8e0a53f14d.txt"
VARIANT = "two-player"


@pytest.fixture(scope="module")
def states(built: Path) -> pl.DataFrame:
    return tables.read_table(built, "states", VARIANT)


def test_states_columns(states: pl.DataFrame) -> None:
    assert states.height == 512 * 44
    assert set(states["objective"].unique()) == {"wins"}
    p1 = states.filter(pl.col("player") == 1)
    p2 = states.filter(pl.col("player") == 2)
    assert p1.height == 512 and p1["p1_score"].null_count() == 512
    assert p1["state_id"].sort().to_list() == list(range(512))
    assert sorted(p2["p1_score"].unique().to_list()) == list(range(1, 44))
    # the id is p1_score * 2**9 + mask
    assert (p2["state_id"] // 512 == p2["p1_score"].cast(pl.Int64)).all()
    assert (
        p2.filter(pl.col("terminal"))["open_sum"]
        .lt(p2.filter(pl.col("terminal"))["p1_score"])
        .all()
    )
    assert states["value"].is_between(0.0, 1.0).all()


def test_bellman_contract_query_returns_no_rows(built: Path) -> None:
    """Every nonterminal value equals the backup of its edges (queries/contracts/bellman.sql)."""
    bad = contract_rows("bellman", built, variant=VARIANT)
    assert bad.height == 0, bad.head()


def test_bellman_contract_query_catches_a_wrong_value(built: Path, tmp_path: Path) -> None:
    """The contract can fail: perturb one P2 value in a copy of the tables."""
    for name in ("states", "edges"):
        frame = tables.read_table(built, name, VARIANT)
        if name == "states":
            hit = pl.col("state_id") == 8 * 512 + 511
            frame = frame.with_columns(
                value=pl.when(hit).then(pl.col("value") + 1e-6).otherwise("value")
            )
        frame.write_parquet(tmp_path / f"{name}.parquet")
    bad = contract_rows("bellman", tmp_path, variant=VARIANT)
    # the perturbed state itself, and the P1 states (ids below 512) whose pass leads to it
    assert 8 * 512 + 511 in bad["state_id"].to_list()
    assert bad.filter(pl.col("state_id") < 512).height > 0


def test_bellman_recomputed_with_polars(built: Path, states: pl.DataFrame) -> None:
    """The same check as the SQL contract, independently in polars, for both players."""
    edges = tables.read_table(built, "edges", VARIANT)
    values = states.select(next_state_id="state_id", next_value="value")
    backup = (
        edges.join(values, on="next_state_id", how="left")
        .with_columns(q=pl.col("reward") + pl.col("sign") * pl.col("next_value").fill_null(0.0))
        .group_by("state_id", "dice", "roll")
        .agg(pl.col("prob").first(), pl.col("q").max())
        .group_by("state_id")
        .agg(backup=(pl.col("prob") * pl.col("q")).sum(), n_dice=pl.col("dice").n_unique())
    )
    joined = states.filter(~pl.col("terminal")).join(backup, on="state_id", how="left")
    assert joined["backup"].null_count() == 0
    assert (joined["n_dice"] == 1).all()  # the number of dice is forced
    for player in (1, 2):
        part = joined.filter(pl.col("player") == player)
        np.testing.assert_allclose(part["value"], part["backup"], rtol=0, atol=1e-12)
    # terminal values: P1 has shut the box, or P2 is already below P1's score: 1 to the mover
    assert (states.filter(pl.col("terminal"))["value"] == 1.0).all()


def test_policy_rows_for_every_nonterminal_state_and_roll(built: Path, states) -> None:
    policy = tables.read_table(built, "policy", VARIANT)
    live = states.filter(~pl.col("terminal")).select("state_id", "open_sum")
    rolls = policy.group_by("state_id").agg(pl.col("roll").sort())
    joined = live.join(rolls, on="state_id", how="left")
    assert joined["roll"].null_count() == 0
    one_die = list(range(1, 7))
    two_dice = list(range(2, 13))
    expected = [one_die if s <= 6 else two_dice for s in joined["open_sum"].to_list()]
    assert joined["roll"].to_list() == expected
    # stuck P1 rows lead to P2's full box against P1's open sum
    stuck_p1 = policy.filter(pl.col("stuck") & (pl.col("state_id") < 512))
    assert stuck_p1.height > 0
    assert (stuck_p1["next_tiles"] == "123456789").all()


def test_p2_curve_query(built: Path, states: pl.DataFrame) -> None:
    curve = run_query("two_player_p2_curve", built, variant=VARIANT)
    assert curve.height == 44
    first = curve.row(0, named=True)
    assert first["player"] == 1 and first["p1_score"] is None
    # seed 002_966add8e0a53f14d.txt: 123456789,0.5028103544024047 and --two 123456789 8: 0.381212
    assert first["expected_wins"] == pytest.approx(0.5028103544024047, abs=1e-12)
    p2 = curve.filter(pl.col("player") == 2)
    assert p2["p1_score"].to_list() == list(range(1, 44))
    at8 = p2.filter(pl.col("p1_score") == 8)["expected_wins"][0]
    assert at8 == pytest.approx(0.381212, abs=5e-7)
    # a higher P1 score is never better for P1
    assert (p2["expected_wins"].diff().drop_nulls() >= -1e-15).all()
    np.testing.assert_allclose(curve["opponent_wins"], 1 - curve["expected_wins"])


def test_expect_command_seed_examples(cli, built: Path) -> None:
    """Seed 002_966add8e0a53f14d.txt: --two --expect 123456789 8 = 0.381212, etc."""
    cases = [
        (["123456789"], 0.502810),
        (["146789"], 0.256254),
        (["123456789", "--p1-score", "8"], 0.381212),
        (["12345689", "--p1-score", "41"], 1.0),
        (["13456789", "--p1-score", "43"], 0.986111),
    ]
    for args, value in cases:
        result = cli(["expect", "--variant", VARIANT, *args, "--data-dir", built])
        assert result.code == 0, result.stderr
        assert float(result.stdout) == pytest.approx(value, abs=5e-7)


def test_move_command_seed_examples(cli, built: Path) -> None:
    """Seed 002_966add8e0a53f14d.txt: --one --move 146789 9 = [9]; --two ... 17 12 = [3, 9]."""
    result = cli(["move", "-v", VARIANT, "146789", "9", "-d", built])
    assert result.code == 0 and result.stdout.startswith("best move [9] ")
    result = cli(["move", "-v", VARIANT, "13456789", "12", "--p1-score", "17", "-d", built])
    assert result.code == 0 and result.stdout.startswith("best move [3, 9] ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["123", "--p1-score", "44"], "cannot finish a turn with score 44"),
        (["123", "--p1-score", "0"], "must be positive"),
        (["1239x"], "not a tile number"),
    ],
)
def test_expect_command_bad_input(cli, built: Path, args: list[str], message: str) -> None:
    result = cli(["expect", "--variant", VARIANT, *args, "--data-dir", built])
    assert result.code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_p1_score_rejected_for_one_player_variants(cli, built: Path) -> None:
    result = cli(["expect", "--variant", "classic", "123", "--p1-score", "8", "-d", built])
    assert result.code == 2 and "two-player" in result.stderr
