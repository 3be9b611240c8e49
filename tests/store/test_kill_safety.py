"""No kill, crash or second process leaves the tables wrong or half-written.

The old generation is a complete, committed build of every variant in which the rows of three
small variants have every float 0.25 off and are marked stale in the manifest, so each table tells
whether it is old or new, and `build --variant all` recomputes just those three (skipping the
others as unchanged) but still rewrites every table: the commit is the same, the run is short.
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

from pipeline.games.registry import resolve
from pipeline.stages import build as stages
from pipeline.store import files, manifest, merging, tables
from pipeline.store.footers import file_rules
from tests.conftest import REPO, invoke

TABLES = ("states", "edges", "policy", "moves")
STALE = ("classic", "lever", "six-tiles-one-die")


def make_old(new: Path, old: Path) -> None:
    """Copy ``new`` to ``old`` with the STALE variants' floats shifted, committed, stale.

    The shifted rows are written the way builds write rows (tables.merged_rows), so that a
    table without STALE rows keeps its bytes and a rebuild gives the new bytes back."""
    shutil.copytree(new, old, dirs_exist_ok=True)
    shifted = {}
    with tables.data_lock(old):
        for path in sorted(old.glob("*.parquet")):
            frame = pl.read_parquet(path).filter(pl.col("variant").is_in(STALE))
            floats = [c for c, kind in frame.schema.items() if kind == pl.Float64]
            if not frame.height or not floats:
                continue
            frame = frame.with_columns(pl.col(c) + 0.25 for c in floats)
            rules = file_rules(old / f"{path.stem}.parquet")
            frames = {
                v: rows.drop("variant")
                for (v,), rows in frame.group_by("variant", maintain_order=True)
            }
            shifted[path.stem] = tables.merged_rows(old, path.stem, frames, rules)
        tables.commit(old, shifted)
    # their manifest records go, so that `build` recomputes them (and skips the rest)
    found = manifest.read(old)
    for variant in STALE:
        found["variants"].pop(variant, None)
    manifest.manifest_path(old).write_bytes(manifest.dumps(found))


def hashes(data: Path) -> dict[str, str]:
    """A digest of every table: the file's sha256 (builds write the same bytes for the same rows:
    tested), or for a table with timing columns its content hash without them."""
    return {
        p.stem: manifest.content_sha256(p.stem, pq.read_table(p))
        if p.stem in manifest.TIMING_COLUMNS
        else manifest.file_sha256(p)
        for p in sorted(data.glob("*.parquet"))
    }


@pytest.fixture(scope="module")
def generations(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``new``: a build of all variants; ``old``: the same, STALE variants' floats shifted."""
    old = tmp_path_factory.mktemp("old")
    make_old(built, old)
    return {"old": old, "new": built}


@pytest.fixture(scope="module")
def expected(generations: dict[str, Path]) -> dict[str, dict[str, str]]:
    """The table hashes of each generation."""
    found = {gen: hashes(path) for gen, path in generations.items()}
    assert all(found["old"][t] != found["new"][t] for t in TABLES)
    return found


@pytest.fixture(scope="module")
def small_generations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same two generations for the STALE variants alone (for the in-process crashes)."""
    new, old = tmp_path_factory.mktemp("small_new"), tmp_path_factory.mktemp("small_old")
    result = invoke(["build", "--variant", ",".join(STALE), "--data-dir", new])
    assert result.code == 0, result.stderr
    make_old(new, old)
    return {"old": old, "new": new}


def neither(data: Path, name: str, sources: dict[str, Path]) -> str:
    """Why table ``name`` in ``data`` is neither generation's (issue 41: the message said only
    that): the new rows in another order, a mix of old and new rows (which variants are which),
    or rows of neither (which columns differ); ``sources``: each generation's directory."""
    found = table_rows(data / f"{name}.parquet", name)
    gens = {gen: table_rows(path / f"{name}.parquet", name) for gen, path in sources.items()}
    for gen, rows in gens.items():
        if found.shape == rows.shape and found.sort(found.columns).equals(rows.sort(rows.columns)):
            return f"it holds the {gen} table's rows in another order"
    by_variant: dict[str, str] = {}
    for variant in sorted(set(found["variant"])):
        mine = found.filter(pl.col("variant") == variant)
        for gen, rows in gens.items():
            theirs = rows.filter(pl.col("variant") == variant)
            if mine.sort(mine.columns).equals(theirs.sort(theirs.columns)):
                by_variant[variant] = gen
                break
        else:
            by_variant[variant] = "neither"
    odd = {v: g for v, g in by_variant.items() if g == "neither"}
    if not odd:
        return f"a mix of generations by variant: {by_variant}"
    first = next(iter(odd))
    mine = found.filter(pl.col("variant") == first)
    new = gens.get("new", next(iter(gens.values())))
    theirs = new.filter(pl.col("variant") == first)
    differ = [
        c for c in mine.columns
        if mine.shape != theirs.shape or not mine[c].equals(theirs[c], null_equal=True)
    ]  # fmt: skip
    return f"rows of neither generation for {sorted(odd)}; {first} differs from new in {differ}"


def table_rows(path: Path, name: str) -> pl.DataFrame:
    """A table's rows without its timing columns (what :func:`hashes` compares)."""
    frame = pl.read_parquet(path)
    return frame.drop([c for c in manifest.TIMING_COLUMNS.get(name, ()) if c in frame.columns])


def generation_of(
    data: Path, expected: dict[str, dict[str, str]], sources: dict[str, Path]
) -> dict[str, str]:
    """Which generation each table on disk is (same bytes); fails if a table is neither,
    saying how it differs from each generation (``sources``: their directories)."""
    out: dict[str, str] = {}
    found: set[str] = set()
    for name, digest in hashes(data).items():
        matches = [gen for gen, tabs in expected.items() if tabs.get(name) == digest]
        assert matches, f"{name} is neither the old nor the new table: " + neither(
            data, name, sources
        )
        if len(matches) == 1:  # a table both generations share tells nothing
            out[name] = matches[0]
        found.add(name)
    assert found == set(expected["new"]), "a table is missing"
    return out


def assert_settled_and_whole(
    data: Path, expected: dict[str, dict[str, str]], sources: dict[str, Path]
) -> str:
    """After recovery: one generation across all tables, matching the manifest; no temp files."""
    with tables.data_lock(data):
        pass  # taking the lock finishes an interrupted commit
    gens = set(generation_of(data, expected, sources).values())
    assert len(gens) == 1, f"a mix of generations: {gens}"
    assert manifest.mismatches(data) == []
    assert not list(data.glob(".*.tmp")) and not (data / tables.JOURNAL_NAME).exists()
    return gens.pop()


def assert_no_partial_file(data: Path) -> None:
    """Every file under a final name is complete: a Parquet footer, a parseable manifest."""
    for path in data.glob("*.parquet"):
        pq.read_metadata(path)
    manifest.read(data)


def test_sigkill_at_random_moments_never_leaves_a_mix(
    generations: dict[str, Path],
    expected: dict[str, dict[str, str]],
    tmp_path: Path,
) -> None:
    argv = [sys.executable, "-m", "pipeline", "build", "--variant", "all"]
    work = tmp_path / "data"
    # one uninterrupted run gives the time scale for the kills (not an assertion)
    shutil.copytree(generations["old"], work)
    t0 = time.perf_counter()
    done = subprocess.run([*argv, "--data-dir", work], cwd=REPO, capture_output=True, text=True)
    full = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    assert assert_settled_and_whole(work, expected, generations) == "new"
    assert done.stdout.count("unchanged since the last build") == len(resolve(["all"])) - 3

    rng = random.Random(20261122)
    outcomes: list[tuple[int | None, str]] = []
    scale = full

    def killed_mid_run() -> bool:
        return any(code == -signal.SIGKILL for code, _ in outcomes)

    # Six kills at random moments; then, while none has landed before its build finished (a
    # neighbour slowed the timed run, so every build beat its kill), more, each aimed earlier
    # than the last, until one does.
    while len(outcomes) < 6 or not killed_mid_run():
        assert len(outcomes) < 16, "no kill landed mid-run, even aimed at the build's start"
        shutil.rmtree(work)
        shutil.copytree(generations["old"], work)
        proc = subprocess.Popen(
            [*argv, "--data-dir", work],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # most kills land in the second half, where the solving and writing happen
        time.sleep(rng.uniform(0.35, 1.05) * scale)
        proc.send_signal(signal.SIGKILL)  # nothing is sent to a process that has ended
        proc.wait()
        if proc.returncode != -signal.SIGKILL:
            scale /= 2  # it finished first: the next kill comes earlier
        assert_no_partial_file(work)
        generation_of(work, expected, generations)  # each table alone is old or new
        outcomes.append((proc.returncode, assert_settled_and_whole(work, expected, generations)))


class Crash(BaseException):
    """Stands in for a kill at one exact step (not an Exception, so nothing catches it)."""


@pytest.mark.parametrize("step", [1, 4, 5, 6, 7, 10, 11, 12])
def test_crash_at_each_step_of_a_commit(
    step: int,
    small_generations: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps 1-4 write the temporary tables, 5-6 the journal (6 renames it: the commit point),
    7-10 rename the tables, 11-12 write the manifest."""
    new_tables = {n: pq.read_table(small_generations["new"] / f"{n}.parquet") for n in TABLES}
    # the bytes an uninterrupted commit of these tables writes
    reference = tmp_path / "reference"
    shutil.copytree(small_generations["old"], reference)
    with tables.data_lock(reference):
        tables.commit(reference, new_tables)
    expected = {"old": hashes(small_generations["old"]), "new": hashes(reference)}
    work = tmp_path / "data"
    shutil.copytree(small_generations["old"], work)
    calls = {"n": 0}
    real_write, real_replace = tables._write_synced, os.replace

    def counted(real):  # type: ignore[no-untyped-def]
        def step_then(*args):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == step:
                raise Crash
            return real(*args)

        return step_then

    step_write = counted(real_write)
    # the tables and the journal are written through the same helper, seen from two modules
    monkeypatch.setattr(tables, "_write_synced", step_write)
    monkeypatch.setattr(files, "_write_synced", step_write)
    monkeypatch.setattr(os, "replace", counted(real_replace))
    with pytest.raises(Crash), tables.data_lock(work):
        tables.commit(work, new_tables)
    monkeypatch.undo()
    assert_no_partial_file(work)
    sources = {"old": small_generations["old"], "new": reference}
    generation_of(work, expected, sources)
    want = "old" if step <= 6 else "new"
    assert assert_settled_and_whole(work, expected, sources) == want


def test_two_builds_at_once_both_finish(small_generations: dict[str, Path], tmp_path: Path) -> None:
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
        reference = pl.read_parquet(small_generations["new"] / f"{name}.parquet")
        assert found.equals(reference), name
    assert invoke(["verify", "--data-dir", work]).code == 0


def test_the_lock_covers_read_modify_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two builds of different variants, each slow between reading and writing: no lost rows."""
    real = merging.TableMerge.finish

    def slow_finish(self):  # type: ignore[no-untyped-def]
        staged = real(self)
        time.sleep(0.2)  # widen the window in which an unlocked writer would lose rows
        return staged

    monkeypatch.setattr(merging.TableMerge, "finish", slow_finish)
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


def test_a_table_of_neither_generation_is_told_apart(tmp_path: Path) -> None:
    """Issue 41: the sigkill test once failed under load with "benchmarks is neither the old
    nor the new table" and no more. Every table is renamed into place whole, so a reader sees
    one generation's file or the other's; what differed is the content a rebuild wrote: Double
    Shutter's exact expected scores, summed by BLAS over however many threads it had free, in
    the last digit (fixed: test_benchmark_tables); rows in another order could too (polars
    joins promise no order unless asked; the keyed tables' merge now asks). The message now
    says which it is."""
    old, new, data = (tmp_path / n for n in ("old", "new", "data"))
    for d in (old, new, data):
        d.mkdir()
    rows = pl.DataFrame({"variant": ["a", "a", "b"], "strategy": ["x", "y", "x"], "v": [1.0, 2, 3]})
    rows.write_parquet(new / "benchmarks.parquet")
    rows.with_columns(v=pl.col("v") + 0.25).write_parquet(old / "benchmarks.parquet")
    sources = {"old": old, "new": new}
    rows.reverse().write_parquet(data / "benchmarks.parquet")
    assert neither(data, "benchmarks", sources) == "it holds the new table's rows in another order"
    mixed = pl.concat([rows.head(2), rows.tail(1).with_columns(v=pl.col("v") + 0.25)])
    mixed.write_parquet(data / "benchmarks.parquet")
    assert "a mix of generations by variant: {'a': 'new', 'b': 'old'}" in neither(
        data, "benchmarks", sources
    )
    rows.with_columns(v=pl.col("v") + 0.5).write_parquet(data / "benchmarks.parquet")
    said = neither(data, "benchmarks", sources)
    assert "rows of neither generation for ['a', 'b']" in said and "['v']" in said


def test_a_keyed_merge_keeps_the_old_rows_in_their_order(tmp_path: Path) -> None:
    """The kept rows of a keyed table (benchmarks) come in the order they were, whatever the
    join's threads do: the same rows make the same bytes."""
    order = ["greedy", "optimal", "random", "max-tiles", "fewest-tiles"] * 40
    old = pl.DataFrame(
        {
            "variant": [f"v{i // 5:03d}" for i in range(200)],
            "strategy": order,
            "method": ["exact"] * 200,
            "win_rate": [i / 200 for i in range(200)],
        }
    )
    new = {"v003": old.filter(pl.col("variant") == "v003").drop("variant")}
    kept = tables._kept_rows(tmp_path / "benchmarks.parquet", "benchmarks", old, new)
    assert kept.equals(old.filter(pl.col("variant") != "v003"))
