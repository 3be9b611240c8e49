"""Reproducible builds: identical tables twice, a manifest that describes them, and `build`
skipping what has not changed (rules and code hash) unless --force."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline import __version__
from pipeline.store import manifest
from pipeline.store.tables import RULES_KEY
from tests.conftest import invoke

TABLES = ("states", "edges", "policy", "moves")
SKIPPED = "unchanged since the last build"


def test_building_twice_gives_identical_tables(built: Path, tmp_path: Path) -> None:
    again = invoke(["build", "--variant", "all", "--data-dir", tmp_path])
    assert again.code == 0, again.stderr
    first, second = manifest.read(built), manifest.read(tmp_path)
    assert sorted(first["tables"]) == sorted(second["tables"])
    for name in first["tables"]:
        # timing columns (benchmarks.seconds ...) measure the machine: the rest must be equal
        timing = manifest.TIMING_COLUMNS.get(name, ())
        one = pl.read_parquet(built / f"{name}.parquet").drop(timing, strict=False)
        two = pl.read_parquet(tmp_path / f"{name}.parquet").drop(timing, strict=False)
        assert one.height > 0 and one.equals(two), name
        assert first["tables"][name]["content_sha256"] == second["tables"][name]["content_sha256"]
        if not timing:  # and pyarrow writes the same bytes
            assert first["tables"][name]["sha256"] == second["tables"][name]["sha256"], name
    assert first["variants"] == second["variants"]


def test_manifest_describes_every_table(built: Path) -> None:
    found = manifest.read(built)
    assert found["package_version"] == __version__
    assert found["code_hash"] == manifest.code_hash()
    assert sorted(found["tables"]) == sorted(p.stem for p in built.glob("*.parquet"))
    for name, entry in found["tables"].items():
        path = built / f"{name}.parquet"
        frame = pl.read_parquet(path)
        assert entry["rows"] == frame.height
        assert entry["sha256"] == manifest.file_sha256(path)
        if name in manifest.TIMING_COLUMNS:
            assert entry["content_sha256"] == manifest.content_sha256(name, pq.read_table(path))
        else:
            assert entry["content_sha256"] == entry["sha256"]
        counts = dict(frame.group_by("variant").len().rows())
        assert entry["variants"] == counts
    rules = json.loads(pq.read_schema(built / "states.parquet").metadata[RULES_KEY])
    assert set(found["variants"]) == set(rules)
    for variant, record in found["variants"].items():
        assert record["rules"] == rules[variant]
        assert record["package_version"] == __version__
        assert record["code_hash"] == manifest.code_hash()
        assert record["seeds"] == {}  # the core stages use no random generator
        assert record["stages"] == ["enumerate", "edges", "solve", "policy", "strategies"]
        for name, rows in record["tables"].items():
            assert found["tables"][name]["variants"][variant] == rows


def test_code_hash_covers_every_source_file(monkeypatch: pytest.MonkeyPatch) -> None:
    manifest.code_hash.cache_clear()
    before = manifest.code_hash()
    sources = sorted(manifest.PACKAGE_DIR.rglob("*.py"))
    assert manifest.PACKAGE_DIR / "stages" / "build.py" in sources
    assert manifest.PACKAGE_DIR / "solve" / "rank_order.py" in sources
    manifest.code_hash.cache_clear()
    real = Path.read_bytes

    def edited(path: Path) -> bytes:
        data = real(path)
        return data + b"# edit\n" if path.name == "rank_order.py" else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    try:
        assert manifest.code_hash() != before
    finally:
        monkeypatch.undo()
        manifest.code_hash.cache_clear()
    assert manifest.code_hash() == before


@pytest.fixture
def two_variants(tmp_path: Path) -> Path:
    """A data dir with classic and six-tiles-one-die built."""
    result = invoke(["build", "--variant", "classic,six-tiles-one-die", "--data-dir", tmp_path])
    assert result.code == 0, result.stderr
    return tmp_path


def mtimes(data: Path) -> dict[str, int]:
    """Modification time of each table file."""
    return {p.name: p.stat().st_mtime_ns for p in data.glob("*.parquet")}


def test_unchanged_variants_are_skipped_and_force_rebuilds(two_variants: Path) -> None:
    before = mtimes(two_variants)
    again = invoke(["build", "--variant", "classic,six-tiles-one-die", "--data-dir", two_variants])
    assert again.code == 0
    assert again.stdout.count(SKIPPED) == 2
    assert "none written" in again.stdout
    assert mtimes(two_variants) == before
    forced = invoke(["build", "--variant", "classic", "--force", "--data-dir", two_variants])
    assert forced.code == 0 and SKIPPED not in forced.stdout
    assert mtimes(two_variants) != before
    assert set(manifest.read(two_variants)["variants"]) == {"classic", "six-tiles-one-die"}


def test_a_new_code_hash_rebuilds(two_variants: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest, "code_hash", lambda: "0" * 64)
    again = invoke(["build", "--variant", "classic", "--data-dir", two_variants])
    assert again.code == 0 and SKIPPED not in again.stdout
    assert manifest.read(two_variants)["variants"]["classic"]["code_hash"] == "0" * 64


def test_new_rules_under_the_same_name_rebuild(two_variants: Path) -> None:
    opts = ["--tiles", "5", "--dice", "1", "--name", "mine", "--data-dir", two_variants]
    assert invoke(["build", *opts]).code == 0
    assert SKIPPED in invoke(["build", *opts]).stdout
    changed = ["--tiles", "6", *opts[2:]]
    rebuilt = invoke(["build", *changed])
    assert rebuilt.code == 0 and SKIPPED not in rebuilt.stdout
    assert manifest.read(two_variants)["variants"]["mine"]["rules"]["tiles"] == 6


def test_a_partial_stage_run_or_a_changed_file_forces_a_rebuild(two_variants: Path) -> None:
    assert invoke(["enumerate", "--variant", "classic", "--data-dir", two_variants]).code == 0
    rebuilt = invoke(["build", "--variant", "classic", "--data-dir", two_variants])
    assert rebuilt.code == 0 and SKIPPED not in rebuilt.stdout
    # a table changed behind the manifest's back: rebuild, do not trust it
    path = two_variants / "policy.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)  # one row lost, metadata kept
    assert manifest.mismatches(two_variants) == [
        "policy.parquet differs from the sha256 recorded in manifest.json"
    ]
    # issue 26: rebuilding classic alone would keep the other variant's rows from the changed
    # file: refused, naming the variants to rebuild; --force rebuilds them all
    refused = invoke(["build", "--variant", "classic", "--data-dir", two_variants])
    assert refused.code == 1 and "policy.parquet was changed" in refused.stderr
    assert "--variant classic,six-tiles-one-die" in refused.stderr
    rebuilt = invoke(["build", "--variant", "classic", "--force", "--data-dir", two_variants])
    assert rebuilt.code == 0 and SKIPPED not in rebuilt.stdout
    assert "six-tiles-one-die" in rebuilt.stdout
    assert manifest.mismatches(two_variants) == []
    assert set(manifest.read(two_variants)["variants"]) == {"classic", "six-tiles-one-die"}
