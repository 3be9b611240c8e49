"""`stb-pipeline export dataset` (issue 33): a self-contained copy of the tables with a dataset
card; the `datasets` library loads every table of it as `stb-pipeline query` reads them, the
card's examples run, `verify` checks it, and a bad target is refused without losing anything."""

from __future__ import annotations

import doctest
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.analysis import dataset
from pipeline.errors import PipelineError
from pipeline.games.published import PUBLISHED
from tests.analysis.test_query import duckdb_binary
from tests.conftest import DOOR_VARIANTS, invoke
from tests.store.test_catalog import assert_same_rows, query_rows


@pytest.fixture(scope="module")
def exported(doors: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The door variants of `doors`, exported."""
    out = tmp_path_factory.mktemp("export") / "dataset"
    result = invoke(["export", "dataset", "-o", out, "-d", doors, "-v", ",".join(DOOR_VARIANTS)])
    assert result.code == 0, result.stderr
    assert f"written to {out}" in result.stdout
    return out


def index_of(root: Path) -> dict:
    """dataset.json."""
    return json.loads((root / "dataset.json").read_text())


def test_one_file_per_table_and_variant_with_the_views_columns(doors: Path, exported: Path) -> None:
    index = index_of(exported)
    assert set(index["variants"]) == set(DOOR_VARIANTS)
    for table, info in index["tables"].items():
        want = query_rows(doors, table)
        held = sorted(want["variant"].unique())
        assert sorted(info["files"]) == held, table
        assert [c["name"] for c in info["columns"]] == want.columns
        assert all(c["meaning"] for c in info["columns"]), f"{table}: a column without meaning"
        for variant, file in info["files"].items():
            frame = pl.read_parquet(exported / file["path"])
            assert frame.schema == want.schema and frame.height == file["rows"]
            assert set(frame["variant"]) == {variant}
    assert index["written_by"]["package_version"] == dataset.__version__
    sums = subprocess.run(
        ["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=exported, capture_output=True
    )
    assert sums.returncode == 0, sums.stdout


def test_every_table_through_the_datasets_library_gives_the_rows_query_reads(
    doors: Path, exported: Path, tmp_path: Path
) -> None:
    from datasets import load_dataset

    index = index_of(exported)
    for table in index["tables"]:
        loaded = load_dataset(str(exported), table, split="train", cache_dir=str(tmp_path))
        got = pl.from_arrow(loaded.data.table)
        assert isinstance(got, pl.DataFrame)
        assert_same_rows(got, query_rows(doors, table), f"datasets {table}")
    one = load_dataset(str(exported), "policy-three-small", split="train", cache_dir=str(tmp_path))
    assert one.num_rows == index["tables"]["policy"]["files"]["three-small"]["rows"]


def card_blocks(root: Path, language: str) -> list[str]:
    """The card's fenced code blocks in ``language``."""
    return re.findall(rf"```{language}\n(.*?)```", (root / "README.md").read_text(), flags=re.S)


def test_the_card_header_has_a_config_per_table_and_variant(exported: Path) -> None:
    """The YAML header as the `datasets` library reads it (huggingface_hub's DatasetCard)."""
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(exported / "README.md")
    configs = {c["config_name"]: c for c in card.data.to_dict()["configs"]}
    index = index_of(exported)
    for table, info in index["tables"].items():
        assert configs[table]["data_files"] == [{"split": "train", "path": f"{table}/*.parquet"}]
        for variant, file in info["files"].items():
            assert configs[f"{table}-{variant}"]["data_files"][0]["path"] == file["path"]
    assert [name for name, c in configs.items() if c.get("default")] == ["policy-classic"]
    text = (exported / "README.md").read_text()
    for name, info in index["variants"].items():
        assert f"### {name}" in text and json.dumps(info["rules"], sort_keys=True) in text


def test_the_cards_examples_run(exported: Path, tmp_path: Path) -> None:
    """The card's shell and Python examples, run from the dataset's folder as it says."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(duckdb_binary()).parent}:{env['PATH']}"
    for line in (x for block in card_blocks(exported, "bash") for x in block.splitlines()):
        run = subprocess.run(["bash", "-c", line], cwd=exported, env=env, capture_output=True)
        assert run.returncode == 0 and b"classic" in run.stdout, run.stderr
    (python,) = card_blocks(exported, "python")
    script = (
        "import doctest, sys\n"
        "test = doctest.DocTestParser().get_doctest(sys.stdin.read(), {}, 'card', 'card', 0)\n"
        "runner = doctest.DocTestRunner()\n"
        "runner.run(test)\n"
        "sys.exit(runner.summarize(verbose=False).failed)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        input=python,
        cwd=exported,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(doctest.DocTestParser().get_examples(python)) >= 6


def test_verify_checks_an_export_and_names_what_was_changed(
    exported: Path, tmp_path: Path, cli
) -> None:
    ok = cli(["verify", "-d", exported, "-v", "classic"])  # the contracts on classic's rows
    assert ok.code == 0, ok.stdout
    for label in ("SHA256SUMS", "dataset.json", "published figures", "contracts/bellman"):
        assert f"ok   {label}" in ok.stdout
    assert "3 figures checked" in ok.stdout  # classic's two, two-player's one
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    states = copy / "states" / "classic.parquet"
    frame = pl.read_parquet(states)
    start = pl.col("state_id") == 511
    frame.with_columns(
        pl.when(start).then(0.08).otherwise(pl.col("value")).alias("value")
    ).write_parquet(states)
    bad = cli(["verify", "-d", copy, "-v", "classic"])
    assert bad.code == 3 and len(bad.stderr.strip().splitlines()) == 1
    for label in ("SHA256SUMS", "dataset.json", "published figures", "contracts/bellman"):
        assert label in bad.stderr
    assert "classic: P(shut) with perfect play is 0.08" in bad.stdout


def test_published_figures_of_the_built_variants_hold(built: Path) -> None:
    """Every published figure against the tables `build` writes: seed
    000_9b8fddd618491a4c.txt (7.143 %), 001_ad09a03ebddbc804.txt (19.427, 0.923),
    002_966add8e0a53f14d.txt (0.5028103544024047), 003_d76d08da6ac0702b.txt (0.0976137161704),
    and PUBLISHED.md (Durango Bill, The Fiddler, the arcini README); the stake game's (not in
    `build --variant all`) from its solver."""
    from pipeline.analysis import sql
    from pipeline.games.registry import get_variant

    con = sql.connect(built)
    try:
        for p in PUBLISHED:
            variant = get_variant(p.variant)
            if p.variant == "two-player-stake":
                start = variant.make().outcomes()["payoff"][0]
            else:
                found = con.execute(
                    "select value from states where variant = $v and state_id = $s",
                    {"v": p.variant, "s": variant.make().start_state()},
                ).fetchone()
                assert found is not None, p.variant
                start = found[0]
            assert p.agrees(start), (p, start)
            assert not p.agrees(start + 3 * p.tolerance), "the check can fail"
    finally:
        con.close()


def test_export_refuses_a_bad_target_in_one_line_and_replaces_its_own(
    doors: Path, tmp_path: Path, cli
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    some = ["export", "dataset", "-d", doors, "-v", "classic"]
    cases = [
        ([*some, "-o", other], "is not empty and holds no dataset of ours"),
        ([*some, "-o", other / "keep.txt"], "is a file, not a folder"),
        ([*some, "-o", doors], "holds the data directory"),
        ([*some, "-o", doors.parent], "holds the data directory"),
        ([*some, "-o", doors / "variants" / "x"], "is where"),
        ([*some[:-1], "nope", "-o", tmp_path / "new"], "variant 'nope' is not built"),
        (["export", "dataset", "-d", tmp_path / "empty", "-o", tmp_path / "new"], "no tables"),
    ]
    for args, message in cases:
        result = cli(args)
        assert result.code == 2 and message in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
    assert (other / "keep.txt").read_text() == "mine" and not (tmp_path / "new").exists()
    forced = cli([*some, "-o", other, "--force"])
    assert forced.code == 0 and not (other / "keep.txt").exists()
    assert index_of(other)["variants"].keys() == {"classic"}
    again = cli([*some[:-1], "two-player", "-o", other])  # its own: replaced without --force
    assert again.code == 0 and index_of(other)["variants"].keys() == {"two-player"}
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_export_that_fails_leaves_the_old_one_and_nothing_else(
    doors: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    out = tmp_path / "dataset"
    assert cli(["export", "dataset", "-d", doors, "-v", "classic", "-o", out]).code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def full_disk(tmp: Path) -> None:
        raise PipelineError("cannot write SHA256SUMS: No space left on device")

    monkeypatch.setattr(dataset, "_write_sums", full_disk)
    failed = cli(["export", "dataset", "-d", doors, "-v", "two-player", "-o", out])
    assert failed.code == 1 and "No space left" in failed.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["dataset"]


def test_the_card_names_the_source_that_gave_each_figure(built: Path, tmp_path: Path) -> None:
    """Issue 41: the card credited FiveThirtyEight's Riddler with the Lever Box's 13 digits;
    the Riddler posed the puzzle (13 Apr 2018), and 0.0976137161704 is the solution a blog post
    gives (seed 003_d76d08da6ac0702b.txt: "Lever Box", 2018/04/14)."""
    out = tmp_path / "dataset"
    result = invoke(["export", "dataset", "-o", out, "-d", built, "-v", "lever"])
    assert result.code == 0, result.stderr
    (line,) = [x for x in (out / "README.md").read_text().splitlines() if "0.0976137161704 |" in x]
    assert '| the "Lever Box" blog post (14 Apr 2018), solving the puzzle' in line, line
    assert "Riddler posed on 13 Apr 2018 |" in line
    assert not any(p.source.startswith("the FiveThirtyEight Riddler") for p in PUBLISHED)
