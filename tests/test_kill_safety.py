"""No kill, crash or second process leaves the tables wrong or half-written.

The old generation is a complete, committed data directory whose every float is 0.25 off the
real build, so each table tells at a glance whether it is old or new.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline import manifest, stages, tables
from pipeline.variants import resolve
from tests.conftest import REPO, invoke

TABLES = ("states", "edges", "policy", "moves")


def contents(data: Path) -> dict[str, pl.DataFrame]:
    """Every table, read whole (fails on a partial or foreign file)."""
    out = {}
    for name in TABLES:
        frame = pl.from_arrow(pq.read_table(data / f"{name}.parquet"))
        assert isinstance(frame, pl.DataFrame)
        out[name] = frame
    return out


@pytest.fixture(scope="module")
def generations(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``new``: a build of all variants; ``old``: the same tables, floats shifted, committed."""
    old = tmp_path_factory.mktemp("old")
    shutil.copytree(built, old, dirs_exist_ok=True)
    shifted = {}
    for name in TABLES:
        table = pq.read_table(old / f"{name}.parquet")
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        frame = frame.with_columns(pl.col(pl.Float64) + 0.25)
        shifted[name] = frame.to_arrow().replace_schema_metadata(table.schema.metadata)
    with tables.data_lock(old):
        tables.commit(old, shifted)
    return {"old": old, "new": built}


@pytest.fixture(scope="module")
def expected(generations: dict[str, Path]) -> dict[str, dict[str, pl.DataFrame]]:
    """The content of each generation."""
    return {gen: contents(path) for gen, path in generations.items()}


def generation_of(data: Path, expected: dict[str, dict[str, pl.DataFrame]]) -> dict[str, str]:
    """Which generation each table on disk is; fails if a table is neither."""
    found = contents(data)
    out = {}
    for name, frame in found.items():
        matches = [gen for gen, tabs in expected.items() if frame.equals(tabs[name])]
        assert matches, f"{name} is neither the old nor the new table"
        out[name] = matches[0]
    return out


def assert_settled_and_whole(data: Path, expected: dict[str, dict[str, pl.DataFrame]]) -> str:
    """After recovery: one generation across all tables, matching the manifest; no temp files."""
    with tables.data_lock(data):
        pass  # taking the lock finishes an interrupted commit
    gens = set(generation_of(data, expected).values())
    assert len(gens) == 1, f"a mix of generations: {gens}"
    assert manifest.mismatches(data) == []
    assert not list(data.glob(".*.tmp")) and not (data / tables.JOURNAL_NAME).exists()
    return gens.pop()


def assert_no_partial_file(data: Path) -> None:
    """Every file under a final name is complete: Parquet readable, manifest parseable."""
    for path in data.glob("*.parquet"):
        pq.read_table(path)
    manifest.read(data)


def test_sigkill_at_random_moments_never_leaves_a_mix(
    generations: dict[str, Path],
    expected: dict[str, dict[str, pl.DataFrame]],
    tmp_path: Path,
) -> None:
    argv = [sys.executable, "-m", "pipeline", "build", "--variant", "all", "--force"]
    work = tmp_path / "data"
    # one uninterrupted run gives the time scale for the kills (not an assertion)
    shutil.copytree(generations["old"], work)
    t0 = time.perf_counter()
    done = subprocess.run([*argv, "--data-dir", work], cwd=REPO, capture_output=True, text=True)
    full = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    assert assert_settled_and_whole(work, expected) == "new"

    rng = random.Random(20261122)
    outcomes = []
    for _ in range(4):
        shutil.rmtree(work)
        shutil.copytree(generations["old"], work)
        proc = subprocess.Popen(
            [*argv, "--data-dir", work],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # most kills land in the second half, where the solving and writing happen
        time.sleep(rng.uniform(0.35, 1.05) * full)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert_no_partial_file(work)
        generation_of(work, expected)  # each table alone is old or new
        outcomes.append((proc.returncode, assert_settled_and_whole(work, expected)))
    assert any(code == -signal.SIGKILL for code, _ in outcomes), "no kill landed mid-run"


class Crash(BaseException):
    """Stands in for a kill at one exact step (not an Exception, so nothing catches it)."""


@pytest.mark.parametrize("step", [1, 4, 5, 6, 7, 10, 11, 12])
def test_crash_at_each_step_of_a_commit(
    step: int,
    generations: dict[str, Path],
    expected: dict[str, dict[str, pl.DataFrame]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps 1-4 write the temporary tables, 5-6 the journal (6 renames it: the commit point),
    7-10 rename the tables, 11-12 write the manifest."""
    new_tables = {n: pq.read_table(generations["new"] / f"{n}.parquet") for n in TABLES}
    work = tmp_path / "data"
    shutil.copytree(generations["old"], work)
    calls = {"n": 0}
    real_write, real_replace = tables._write_synced, os.replace

    def counted(real):  # type: ignore[no-untyped-def]
        def step_then(*args):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == step:
                raise Crash
            return real(*args)

        return step_then

    monkeypatch.setattr(tables, "_write_synced", counted(real_write))
    monkeypatch.setattr(tables.os, "replace", counted(real_replace))
    with pytest.raises(Crash), tables.data_lock(work):
        tables.commit(work, new_tables)
    monkeypatch.undo()
    assert_no_partial_file(work)
    generation_of(work, expected)
    want = "old" if step <= 6 else "new"
    assert assert_settled_and_whole(work, expected) == want


def test_two_builds_at_once_both_finish(generations: dict[str, Path], tmp_path: Path) -> None:
    """Two processes, overlapping variant sets, one data dir: both finish, nothing is lost."""
    work = tmp_path / "data"
    argv = [sys.executable, "-m", "pipeline", "build", "--force", "--data-dir", work]
    procs = [
        subprocess.Popen([*argv, "--variant", v], cwd=REPO, stderr=subprocess.PIPE, text=True)
        for v in ("classic,lever", "lever,six-tiles-one-die")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert manifest.mismatches(work) == []
    assert not list(work.glob(".*.tmp"))
    chosen = ["classic", "lever", "six-tiles-one-die"]
    assert sorted(manifest.read(work)["variants"]) == chosen
    for name in TABLES:
        found = pl.read_parquet(work / f"{name}.parquet")
        reference = pl.read_parquet(generations["new"] / f"{name}.parquet")
        assert found.equals(reference.filter(pl.col("variant").is_in(chosen))), name
    assert invoke(["verify", "--data-dir", work]).code == 0


def test_the_lock_covers_read_modify_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two builds of different variants, each slow between reading and writing: no lost rows."""
    real = tables.merged_rows

    def slow_merge(*args, **kwargs):  # type: ignore[no-untyped-def]
        merged = real(*args, **kwargs)
        time.sleep(0.2)  # widen the window in which an unlocked writer would lose rows
        return merged

    monkeypatch.setattr(tables, "merged_rows", slow_merge)
    errors: list[BaseException] = []

    def build(name: str) -> None:
        try:
            stages.run(resolve([name]), stages.STAGES, tmp_path)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(n,)) for n in ("classic", "six-tiles-one-die")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for name in TABLES:
        variants = set(pl.read_parquet(tmp_path / f"{name}.parquet")["variant"])
        assert variants == {"classic", "six-tiles-one-die"}, name
    assert set(manifest.read(tmp_path)["variants"]) == {"classic", "six-tiles-one-die"}
    assert manifest.mismatches(tmp_path) == []
