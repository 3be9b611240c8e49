"""Large merges are written slice by slice: same rows, order, metadata and manifest as in memory.

The thresholds are lowered so that small frames take the streamed path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.errors import TableError
from pipeline.store import tables

RULES = {v: {"game": v} for v in ("a", "b", "c", "d")}


def frame(n: int, seed: int, exact: bool = False) -> pl.DataFrame:
    """A variant's rows: ints, floats, strings and a list column like the policy table."""
    rng = np.random.default_rng(seed)
    out = pl.DataFrame(
        {
            "state_id": np.arange(n, dtype=np.int64),
            "tiles": [f"t{seed}-{i}" for i in range(n)],
            "value": rng.random(n),
            "roll": pl.Series(rng.integers(1, 7, n), dtype=pl.Int16),
            "move": [[int(x)] if x else None for x in rng.integers(0, 3, n)],
        }
    )
    return out.with_columns(value_exact=pl.lit("1/2")) if exact else out


def write(data: Path, frames: dict, name: str = "policy") -> None:
    with tables.data_lock(data):
        tables.commit(data, {name: tables.merged_rows(data, name, frames, RULES)})


def chunked(f: pl.DataFrame, step: int) -> tables.ChunkedRows:
    def chunks() -> Iterator[pl.DataFrame]:
        for lo in range(0, f.height, step):
            yield f.slice(lo, step)

    return tables.ChunkedRows(f.height, f.schema, chunks)


def build_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: list[dict]) -> tuple:
    """Run the same writes in memory and streamed; return both tables and manifests."""
    out = []
    for streamed in (False, True):
        data = tmp_path / ("streamed" if streamed else "memory")
        data.mkdir()
        monkeypatch.setattr(tables, "STREAM_ROWS", 10 if streamed else 10**9)
        monkeypatch.setattr(tables, "SLICE_ROWS", 7)
        for frames in steps:
            write(data, frames)
        manifest = json.loads((data / "manifest.json").read_text())
        out.append((pq.read_table(data / "policy.parquet"), manifest["tables"]["policy"]))
    return out[0], out[1]


def test_streamed_merge_equals_in_memory_merge(tmp_path: Path, monkeypatch) -> None:
    steps = [
        {"d": frame(5, 1), "b": frame(30, 2)},
        # a new variant between two old ones, one replaced, one with an extra column, chunked
        {"c": chunked(frame(23, 3, exact=True), 4), "b": frame(3, 4), "a": frame(12, 5)},
        {"d": frame(40, 6)},
    ]
    (mem, mem_entry), (stream, stream_entry) = build_both(tmp_path, monkeypatch, steps)
    assert pl.from_arrow(stream).equals(pl.from_arrow(mem))
    assert stream.schema.metadata[tables.RULES_KEY] == mem.schema.metadata[tables.RULES_KEY]
    assert stream_entry["variants"] == mem_entry["variants"] == {"a": 12, "b": 3, "c": 23, "d": 40}
    assert stream_entry["rows"] == mem_entry["rows"] == 78


def test_streamed_merge_writes_row_groups_of_at_most_a_slice(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tables, "STREAM_ROWS", 10)
    monkeypatch.setattr(tables, "SLICE_ROWS", 8)
    write(tmp_path, {"a": chunked(frame(50, 1), 20)})
    meta = pq.ParquetFile(tmp_path / "policy.parquet").metadata
    assert meta.num_rows == 50
    assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 8


def test_streamed_merge_rejects_rows_that_do_not_fit_and_keeps_the_old_table(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(tables, "STREAM_ROWS", 10)
    write(tmp_path, {"a": frame(20, 1)})
    before = (tmp_path / "policy.parquet").read_bytes()
    bad = frame(20, 2).with_columns(value=pl.lit([1.0]))  # a list where the table has floats
    with pytest.raises(TableError, match="do not fit"):
        write(tmp_path, {"b": bad})
    assert (tmp_path / "policy.parquet").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_streamed_table_has_the_same_bytes_as_the_table_written_whole(
    tmp_path: Path, monkeypatch
) -> None:
    """With the real row group size, streaming changes no byte (manifests compare hashes)."""
    steps = [{"b": frame(30, 2), "d": frame(5, 1)}, {"c": frame(23, 3), "b": frame(3, 4)}]
    files = []
    for threshold in (10**9, 10):
        data = tmp_path / str(threshold)
        data.mkdir()
        monkeypatch.setattr(tables, "STREAM_ROWS", threshold)
        for frames in steps:
            write(data, frames)
        files.append((data / "policy.parquet").read_bytes())
    assert files[0] == files[1]
