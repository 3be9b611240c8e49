"""The build's writer thread: a writer that fails stops the build, without hanging it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pipeline.build import stages
from pipeline.errors import PipelineError
from pipeline.games.registry import get_variant
from pipeline.store import merging


def test_a_failing_writer_stops_the_build_and_keeps_the_old_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    stages.run([get_variant("six-tiles-one-die")], stages.STAGES, data)
    before = {p.name: p.read_bytes() for p in data.glob("*.parquet")}
    assert before

    def full_disk(self: merging.TableMerge, *args: object) -> None:
        raise PipelineError(f"cannot write {self.tmp}: No space left on device")

    monkeypatch.setattr(merging.TableMerge, "add", full_disk)
    outcome: dict[str, str] = {}

    def build() -> None:
        names = ("classic", "classic-score", "lever", "one-die-6", "twelve-tiles")
        try:
            stages.run([get_variant(n) for n in names], stages.STAGES, data)
        except PipelineError as exc:
            outcome["error"] = str(exc)

    # More frames than the writer's queue holds: the producer must see the writer's error
    # instead of waiting for room in a queue that nobody empties.
    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the build hung after its writer failed"
    assert "No space left on device" in outcome["error"]
    assert {p.name: p.read_bytes() for p in data.glob("*.parquet")} == before
    assert not list(data.rglob("*.tmp"))
