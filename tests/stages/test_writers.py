"""The build's writer thread: a writer that fails stops the build, without hanging it."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.games.registry import get_variant
from pipeline.stages import build as stages
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


@pytest.mark.parametrize(
    ("argv", "folder"),
    [
        (["build", "--variant", "classic"], ""),
        (["build", "--tiles", "16", "--objective", "score"], "variants/stb-16t-2d6-score/"),
    ],
)
def test_a_full_disk_is_one_line_naming_the_table_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], folder: str
) -> None:
    """The disk filling up under a table (the OSError comes from inside pyarrow's writer) is
    reported as what it is, not as an internal error; the old tables stay, nothing is left."""
    import errno

    from pipeline.store import files
    from tests.conftest import invoke

    data = tmp_path / "data"
    assert invoke(["build", "--variant", "six-tiles-one-die", "-d", data]).code == 0
    before = {p.name: p.read_bytes() for p in data.glob("*.parquet")}

    def fill_up(self: files.HashedFile, chunk: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.HashedFile, "write", fill_up)
    # --quiet: a build slowed by a busy machine prints progress lines before the error
    result = invoke([*argv, "-d", data, "--quiet"])
    assert result.code == 1
    assert result.stderr.startswith("error: cannot write ") and result.stderr.count("\n") == 1
    # the table's own name, not a hidden temporary one
    assert re.fullmatch(
        rf"error: cannot write {re.escape(str(data))}/{folder}[a-z_]+\.parquet: "
        r"No space left on device\n",
        result.stderr,
    ), result.stderr
    assert {p.name: p.read_bytes() for p in data.glob("*.parquet")} == before
    assert not [p for p in data.rglob("*") if p.name.endswith(".tmp")]
    assert not (data / "variants").exists()
