"""Tables are rewritten a variant at a time (store/merging.py): rows, order, metadata and
manifest as a plain in-memory merge would give them, in row groups of a fixed size.

The slice size is lowered so that small frames span several row groups and old-file slices.
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
from pipeline.store import merging, tables

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


def oracle(steps: list[dict]) -> pl.DataFrame:
    """The table the steps should leave, merged in memory: each step replaces its variants'
    rows, and the rows are sorted by variant (stable)."""
    rows: dict[str, pl.DataFrame] = {}
    for frames in steps:
        for variant, f in frames.items():
            whole = pl.concat(list(f.chunks())) if isinstance(f, tables.ChunkedRows) else f
            rows[variant] = whole.select(pl.lit(variant).alias("variant"), pl.exclude("variant"))
    return pl.concat([rows[v] for v in sorted(rows)], how="diagonal_relaxed")


def test_merges_equal_an_in_memory_merge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(merging, "SLICE_ROWS", 7)
    steps = [
        {"d": frame(5, 1), "b": frame(30, 2)},
        # a new variant between two old ones, one replaced, one with an extra column, chunked
        {"c": chunked(frame(23, 3, exact=True), 4), "b": frame(3, 4), "a": frame(12, 5)},
        {"d": frame(40, 6)},
    ]
    for frames in steps:
        write(tmp_path, frames)
    found = pl.read_parquet(tmp_path / "policy.parquet")
    want = oracle(steps)
    assert found.select(want.columns).equals(want)
    meta = pq.read_schema(tmp_path / "policy.parquet").metadata
    assert json.loads(meta[tables.RULES_KEY]) == RULES
    entry = json.loads((tmp_path / "manifest.json").read_text())["tables"]["policy"]
    assert entry["variants"] == {"a": 12, "b": 3, "c": 23, "d": 40}
    assert entry["rows"] == 78


def row_groups(path: Path) -> list[tuple[str, int]]:
    """(variant, rows) of each row group of a table, with a check that none spans two."""
    file = pq.ParquetFile(path)
    out = []
    for i in range(file.metadata.num_row_groups):
        variants = file.read_row_group(i, columns=["variant"]).column(0).unique().to_pylist()
        assert len(variants) == 1, f"row group {i} holds {variants}"
        out.append((variants[0], file.metadata.row_group(i).num_rows))
    return out


def test_row_groups_hold_one_variant_in_slices(tmp_path, monkeypatch) -> None:
    """Each variant's rows are cut every SLICE_ROWS rows, its last group shorter, whether they
    come whole, in chunks, or are copied from the old file a slice at a time."""
    monkeypatch.setattr(merging, "SLICE_ROWS", 8)
    write(tmp_path, {"b": chunked(frame(50, 1), 20), "a": frame(3, 2), "d": frame(17, 3)})
    b_rows = [*[("b", 8)] * 6, ("b", 2)]
    d_rows = [("d", 8), ("d", 8), ("d", 1)]
    assert row_groups(tmp_path / "policy.parquet") == [("a", 3), *b_rows, *d_rows]
    write(tmp_path, {"c": frame(9, 4)})  # old rows of a, b and d copied around the new c
    c_rows = [("c", 8), ("c", 1)]
    assert row_groups(tmp_path / "policy.parquet") == [("a", 3), *b_rows, *c_rows, *d_rows]


def test_an_old_table_out_of_variant_order_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(merging, "SLICE_ROWS", 8)
    unsorted = pl.concat([frame(2, 1).with_columns(variant=pl.lit(v)) for v in "aba"])
    unsorted.select("variant", pl.exclude("variant")).write_parquet(tmp_path / "policy.parquet")
    with pytest.raises(TableError, match="not sorted by variant"):
        write(tmp_path, {"c": frame(3, 2)})


def test_rows_that_do_not_fit_keep_the_old_table(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(merging, "SLICE_ROWS", 8)
    write(tmp_path, {"a": frame(20, 1)})
    before = (tmp_path / "policy.parquet").read_bytes()
    bad = frame(20, 2).with_columns(value=pl.lit([1.0]))  # a list where the table has floats
    with pytest.raises(TableError, match="do not fit"):
        write(tmp_path, {"b": bad})
    assert (tmp_path / "policy.parquet").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_bytes_do_not_depend_on_how_rows_are_handed_over(tmp_path: Path) -> None:
    """Whole frames or slices, one step or two: the same rows give the same file (manifests
    compare hashes)."""
    whole = [{"b": frame(30, 2), "d": frame(5, 1), "c": frame(23, 3)}]
    pieces = [{"b": frame(30, 2), "d": frame(5, 1)}, {"c": chunked(frame(23, 3), 4)}]
    files = []
    for i, steps in enumerate((whole, pieces)):
        data = tmp_path / str(i)
        data.mkdir()
        for frames in steps:
            write(data, frames)
        files.append((data / "policy.parquet").read_bytes())
    assert files[0] == files[1]


def test_variants_must_come_in_order(tmp_path: Path) -> None:
    merge = merging.TableMerge(tmp_path / "policy.parquet")
    with pytest.raises(ValueError, match="ascending"), merge:
        merge.add("b", frame(3, 1), None)
        merge.add("a", frame(3, 2), None)
    assert not list(tmp_path.iterdir())  # the failed merge left no temporary file


def test_a_later_variant_with_a_new_column_is_refused(tmp_path: Path) -> None:
    """A build hands variants over one by one: the columns are fixed by the first."""
    merge = merging.TableMerge(tmp_path / "moves.parquet")
    with pytest.raises(TableError, match="value_exact"), merge:
        merge.add("a", frame(3, 1).drop("move"), None)
        merge.add("b", frame(3, 2, exact=True).drop("move"), None)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_rebuild_decodes_only_the_old_rows_it_keeps(tmp_path: Path, monkeypatch) -> None:
    """Issue 26: the old row groups of a replaced variant are skipped unread (their statistics
    name their one variant), and reading stops at the first group after the variant added; so a
    rebuild of every variant decodes no old row, and its memory is a fresh build's."""
    monkeypatch.setattr(merging, "SLICE_ROWS", 8)
    write(tmp_path, {"a": frame(20, 1), "b": frame(30, 2), "c": frame(5, 3), "d": frame(9, 4)})
    read: list[int] = []
    real = pq.ParquetFile.iter_batches

    def recording(self, *args, row_groups=None, **kwargs):  # type: ignore[no-untyped-def]
        read.extend(row_groups or [])
        return real(self, *args, row_groups=row_groups, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recording)
    write(tmp_path, {"a": frame(4, 5), "b": frame(6, 6), "c": frame(7, 7), "d": frame(8, 8)})
    assert read == []  # every variant replaced: not one old group decoded
    groups = row_groups(tmp_path / "policy.parquet")  # the groups the next write reads from
    write(tmp_path, {"b": frame(3, 9)})
    assert [groups[i][0] for i in read] == ["a", "c", "d"]  # b's old group never read
    want = oracle(
        [
            {"a": frame(4, 5), "b": frame(6, 6), "c": frame(7, 7), "d": frame(8, 8)},
            {"b": frame(3, 9)},
        ]
    )
    assert pl.read_parquet(tmp_path / "policy.parquet").select(want.columns).equals(want)


def test_an_old_file_without_statistics_is_read_slice_by_slice(tmp_path: Path) -> None:
    """A table written elsewhere (no statistics, row groups spanning variants) still merges."""
    old = oracle([{"a": frame(20, 1), "b": frame(30, 2), "c": frame(5, 3)}])
    old.write_parquet(tmp_path / "policy.parquet", statistics=False, row_group_size=16)
    write(tmp_path, {"b": frame(3, 9)})
    want = oracle([{"a": frame(20, 1), "b": frame(3, 9), "c": frame(5, 3)}])
    assert pl.read_parquet(tmp_path / "policy.parquet").select(want.columns).equals(want)
