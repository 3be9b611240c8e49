"""`verify`: a clean build keeps every data contract, and each way of breaking a table on purpose
makes the contract about it fail (exit 3, one line on stderr, the offending rows on stdout)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.analysis import contracts as verify
from pipeline.analysis import sql
from pipeline.store import catalog
from pipeline.store.tables import RULES_KEY
from tests.conftest import invoke
from tests.support.tables import write_streamed

VARIANTS = "classic,lever,classic-score"


@pytest.fixture(scope="module")
def small_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three variants (one with a choice of dice, one minimising): enough to break on purpose."""
    data = tmp_path_factory.mktemp("verify")
    result = invoke(["build", "--variant", VARIANTS, "--data-dir", data])
    assert result.code == 0, result.stderr
    return data


@pytest.fixture
def copy_of(small_build: Path, tmp_path: Path) -> Path:
    """A private copy of the small build, free to break (its catalog rewritten for its place:
    a copy's catalog reads the directory it was copied from)."""
    target = tmp_path / "data"
    shutil.copytree(small_build, target)
    catalog.refresh(target)
    return target


def rewrite(data: Path, name: str, change: Callable[[pl.DataFrame], pl.DataFrame]) -> None:
    """Rewrite table ``name`` through ``change``, keeping its Parquet metadata (rules)."""
    path = data / f"{name}.parquet"
    table = pq.read_table(path)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    new = change(frame).to_arrow().replace_schema_metadata(table.schema.metadata)
    pq.write_table(new, path)


def is_row(variant: str, state_id: int, **more: int) -> pl.Expr:
    """Filter for one row of a table."""
    expr = (pl.col("variant") == variant) & (pl.col("state_id") == state_id)
    for col, value in more.items():
        expr &= pl.col(col) == value
    return expr


def failed(data: Path, variant: str | None = "classic") -> dict[str, pl.DataFrame]:
    """The contracts that fail, with their offending rows."""
    return {r.name: r.violations for r in verify.verify(data, variant) if not r.ok}


def test_clean_build_keeps_every_contract(small_build: Path) -> None:
    result = invoke(["verify", "--data-dir", small_build])
    assert result.code == 0, result.stdout + result.stderr
    # the SQL contracts, plus manifest.json, the one schema per table, no temporary files, no
    # unfinished commit, the catalog
    assert f"all {len(verify.contract_names()) + 5} contracts hold" in result.stdout


def test_variant_takes_lists_and_all_like_the_stages(small_build: Path) -> None:
    n = len(verify.contract_names()) + 5  # manifest, schema, temporary files, commit, catalog
    names = VARIANTS.split(",")
    both = invoke(["verify", "--variant", names[0], "-v", names[1], "--data-dir", small_build])
    assert both.code == 0, both.stderr
    assert f"all {2 * n} contracts hold" in both.stdout
    assert f"{names[0]}:" in both.stdout and f"{names[1]}:" in both.stdout
    everything = invoke(["verify", "--variant", "all", "--data-dir", small_build])
    assert everything.code == 0, everything.stderr
    assert f"all {n} contracts hold" in everything.stdout


def test_every_variant_of_the_full_build_keeps_every_contract(built: Path) -> None:
    results = verify.verify(built)
    own = {"manifest", "schema", "temporary", "journal", "catalog"}
    assert {r.name for r in results} == {*own, *verify.contract_names()}
    assert [r.name for r in results if not r.ok or r.skipped] == []


def test_every_contract_has_the_sql_header() -> None:
    for name in verify.contract_names():
        head = sql.header(verify.CONTRACTS_DIR / f"{name}.sql")
        assert head.get("name") == f"contracts/{name}"
        for key in ("description", "inputs", "grain", "output"):
            assert head.get(key), f"{name}.sql lacks `-- {key}:`"
        assert "variant" in sql.params(verify.CONTRACTS_DIR / f"{name}.sql"), name
        text = (verify.CONTRACTS_DIR / f"{name}.sql").read_text()
        assert text.rstrip().endswith("select * from final"), name


def test_changed_value_breaks_bellman_and_is_reported(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "states",
        lambda f: f.with_columns(
            value=pl.when(is_row("classic", 511)).then(pl.col("value") + 1e-9).otherwise("value")
        ),
    )
    broken = failed(copy_of)
    assert broken["bellman"]["state_id"].to_list() == [511]
    # the start state is also the rule search's optimal line, which no longer agrees
    assert set(broken) == {"bellman", "manifest", "strategy_search"}
    assert broken["strategy_search"]["what"].to_list() == ["optimal line"]
    result = invoke(["verify", "--data-dir", copy_of])
    assert result.code == 3
    assert result.stderr.count("\n") == 1 and "bellman" in result.stderr
    assert "FAIL contracts/bellman" in result.stdout and "511" in result.stdout


def test_value_within_the_recorded_residual_passes(copy_of: Path) -> None:
    """A value-iteration solve records its residual; the Bellman check allows that much."""
    rewrite(
        copy_of,
        "states",
        lambda f: f.with_columns(
            value=pl.when(is_row("classic", 511)).then(pl.col("value") + 1e-9).otherwise("value"),
            residual=pl.when(pl.col("variant") == "classic").then(1e-8).otherwise("residual"),
        ),
    )
    assert "bellman" not in failed(copy_of)
    rewrite(copy_of, "states", lambda f: f.with_columns(residual=pl.lit(1e-10)))
    assert "bellman" in failed(copy_of)


def test_dropped_edge_breaks_move_legality(copy_of: Path) -> None:
    # state 511, roll 9 with two dice has several moves; drop the move [4, 5]
    rewrite(
        copy_of,
        "edges",
        lambda f: f.filter(
            ~(is_row("classic", 511, roll=9) & (pl.col("move") == pl.lit([4, 5], pl.List(pl.Int8))))
        ),
    )
    broken = failed(copy_of)
    missing = broken["stb_move_legal"]
    assert missing["problem"].to_list() == ["a legal move is missing from edges"]
    assert missing.row(0, named=True)["move"] == [4, 5]
    assert "moves_regret" in broken  # the moves table still lists the dropped move


def test_duplicated_state_breaks_uniqueness(copy_of: Path) -> None:
    rewrite(copy_of, "states", lambda f: pl.concat([f, f.filter(is_row("lever", 7))]))
    broken = failed(copy_of, None)
    dup = broken["unique_state"]
    assert dup.select("table_name", "variant", "state_id", "copies").rows() == [
        ("states", "lever", 7, 2)
    ]


def test_changed_probability_breaks_roll_probabilities(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "edges",
        lambda f: f.with_columns(
            prob=pl.when(is_row("classic", 3, roll=12)).then(0.03).otherwise("prob")
        ),
    )
    broken = failed(copy_of)
    assert broken["roll_probabilities"].select("state_id", "dice").rows() == [(3, 2)]


def test_wrong_next_state_breaks_move_legality(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "edges",
        lambda f: f.with_columns(
            next_state_id=pl.when(is_row("classic", 511, roll=2))
            .then(510)
            .otherwise("next_state_id")
        ),
    )
    problems = failed(copy_of)["stb_move_legal"]["problem"].to_list()
    assert "the next state is not the state with the move's tiles shut" in problems


def test_illegal_move_breaks_move_legality(copy_of: Path) -> None:
    # the move [2] on a roll of 2 from 1..9, rewritten as [1, 3] (sums to 4, not 2)
    rewrite(
        copy_of,
        "edges",
        lambda f: f.with_columns(
            move=pl.when(is_row("classic", 511, roll=2))
            .then(pl.lit([1, 3], pl.List(pl.Int8)))
            .otherwise("move")
        ),
    )
    problems = failed(copy_of)["stb_move_legal"]["problem"].to_list()
    assert "the tiles shut do not sum to the roll" in problems


def test_wrong_number_of_dice_breaks_move_legality(copy_of: Path) -> None:
    # lever may roll one die only once 7, 8, 9 are shut; claim state 511 rolled one die
    rewrite(
        copy_of,
        "edges",
        lambda f: f.with_columns(
            dice=pl.when(is_row("lever", 511)).then(pl.lit(1, pl.Int16)).otherwise("dice")
        ),
    )
    problems = failed(copy_of, "lever")["stb_move_legal"]["problem"].to_list()
    assert any(p.startswith("roll ") and "impossible with 1 dice" in p for p in problems)
    assert any(p.startswith("edges roll [1] but the rules allow [2]") for p in problems)


def test_suboptimal_policy_move_breaks_policy_optimal(copy_of: Path) -> None:
    # on 9 from 1..9 the policy shuts [9]; claim it shuts [1, 8] instead
    rewrite(
        copy_of,
        "policy",
        lambda f: f.with_columns(
            best_move=pl.when(is_row("classic", 511, roll=9))
            .then(pl.lit([1, 8], pl.List(pl.Int8)))
            .otherwise("best_move")
        ),
    )
    broken = failed(copy_of)
    assert broken["policy_optimal"].select("state_id", "roll").rows() == [(511, 9)]


def test_wrong_regret_breaks_moves_regret(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "moves",
        lambda f: f.with_columns(
            regret=pl.when(is_row("classic-score", 511, roll=9))
            .then(pl.col("regret") + 0.5)
            .otherwise("regret")
        ),
    )
    broken = failed(copy_of, "classic-score")
    assert set(broken["moves_regret"]["roll"].to_list()) == {9}
    assert "policy_optimal" not in broken


def test_out_of_range_probability_breaks_value_bounds(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "states",
        lambda f: f.with_columns(value=pl.when(is_row("classic", 1)).then(1.5).otherwise("value")),
    )
    bounds = failed(copy_of)["value_bounds"]
    assert bounds.select("table_name", "state_id").rows() == [("states", 1)]


def test_score_above_the_largest_final_score_breaks_value_bounds(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "moves",
        lambda f: f.with_columns(
            value=pl.when(is_row("classic-score", 511, roll=12)).then(46.0).otherwise("value")
        ),
    )
    # the bound is the largest final score a stuck roll can leave, read from the policy table
    policy = pl.read_parquet(copy_of / "policy.parquet")
    top = policy.filter((pl.col("variant") == "classic-score") & pl.col("stuck"))["value"].max()
    assert isinstance(top, float) and top < 46.0
    bounds = failed(copy_of, "classic-score")["value_bounds"]
    assert set(bounds["table_name"]) == {"moves"}
    assert set(bounds["problem"]) == {f"value above {top} for objective score"}


def test_other_variants_rows_are_not_blamed(copy_of: Path) -> None:
    rewrite(
        copy_of,
        "states",
        lambda f: f.with_columns(
            value=pl.when(is_row("classic", 511)).then(0.5).otherwise("value")
        ),
    )
    assert set(failed(copy_of, "lever")) == {"manifest"}
    assert invoke(["verify", "--variant", "classic", "--data-dir", copy_of]).code == 3


def test_verify_without_tables_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["verify", "--data-dir", tmp_path])
    assert result.code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_move_legality_applies_only_to_one_player_shut_the_box(copy_of: Path) -> None:
    """Other games' moves are not tile lists summing to the roll: the contract leaves them be."""
    rewrite(
        copy_of,
        "edges",
        lambda f: f.with_columns(
            move=pl.when(is_row("classic", 511, roll=2))
            .then(pl.lit([1, 3], pl.List(pl.Int8)))
            .otherwise("move")
        ),
    )
    assert "stb_move_legal" in failed(copy_of)
    path = copy_of / "states.parquet"
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    rules = json.loads(meta[RULES_KEY])
    rules["classic"]["game"] = "some-other-game"
    meta[RULES_KEY] = json.dumps(rules).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    assert "stb_move_legal" not in failed(copy_of)


def test_lean_files_are_sampled_by_row_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 23: a lean file (the full Knucklebones game: 4,590 row groups per objective) is read
    # by verify's contracts through a few evenly spaced row groups, the first and last among them
    import numpy as np

    from pipeline.stages.streamed import written_schema
    from pipeline.store import stream_writer

    monkeypatch.setattr(stream_writer, "ROW_GROUP_ROWS", 1000)
    path = tmp_path / "variants" / "lean" / "states.parquet"
    path.parent.mkdir(parents=True)
    columns = ("variant", "state_id", "objective", "maximise", "value", "residual")
    schema = written_schema("states", columns, {RULES_KEY: b'{"lean": {"game": "knucklebones"}}'})
    constants = {"variant": "lean", "objective": "wins", "maximise": True, "residual": 0.0}
    batches = [
        {"state_id": np.arange(a, a + 1000), "value": np.full(1000, 0.5)}
        for a in range(0, 10_000, 1000)
    ]
    write_streamed(path, batches, schema, constants)
    found = sql.lean_sample(path, 3)
    assert found is not None and found.groups == 10 and found.rows == 3000
    assert found.ranges == ((0, 999), (4000, 4999), (9000, 9999))
    con = sql.connect(tmp_path, lean_groups=3)
    n, low, high, tiles = con.execute(
        "select count(*), min(state_id), max(state_id), count(tiles) from states"
    ).fetchone()
    assert (n, low, high, tiles) == (3000, 0, 9999, 0)  # the columns it lacks read as null
    whole = sql.connect(tmp_path)  # every other reader reads it all
    assert whole.execute("select count(*) from states").fetchone() == (10_000,)


def test_strategy_rows_of_a_variant_not_built_break_strategy_search(copy_of: Path) -> None:
    """Issue 41: `strategies --variant lever` with lever not built wrote rows that no query can
    read (every query refuses a variant without states rows), and verify did not notice."""
    for table in ("strategy_search", "strategy_exceptions"):
        rewrite(
            copy_of,
            table,
            lambda f: pl.concat(
                [f, f.filter(pl.col("variant") == "classic").with_columns(variant=pl.lit("ghost"))]
            ),
        )
    broken = failed(copy_of, None)
    orphans = broken["strategy_search"].filter(pl.col("variant") == "ghost")
    assert set(orphans["what"]) == {"strategy_search", "strategy_exceptions"}
    assert set(orphans["problem"]) == {
        "strategy rows of a variant that is not built (no states rows)"
    }
    assert set(broken["strategy_search"]["variant"]) == {"ghost"}  # classic's rows are fine
