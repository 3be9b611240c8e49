"""Row groups encoded on several threads and spliced into one file (store/splice.py, used by
store/stream_writer.py): the file a single ParquetWriter writes, byte for byte, on any number
of threads; its Thrift footer read and written back unchanged; errors reach the producer."""

from __future__ import annotations

import copy
import hashlib
import io
import itertools
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import UsageError
from pipeline.games.shutbox.stream import parquet_options, schemas
from pipeline.store import splice, stream_writer, thrift

META = {b"stb.rules": b'{"v": {"tiles": 20}}'}


def policy_rows(n: int, seed: int) -> dict[str, np.ndarray]:
    """A batch of a big box's policy table: delta-encoded ids, dictionaries, nulls."""
    rng = np.random.default_rng(seed)
    stuck = rng.random(n) < 0.1
    return {
        "state_id": np.sort(rng.integers(0, 1 << 20, n)),
        "roll": rng.integers(3, 19, n).astype(np.int16),
        "stuck": stuck,
        "best_move_mask": np.ma.array(rng.integers(0, 1 << 20, n).astype(np.int32), mask=stuck),
        "next_state_id": np.ma.array(rng.integers(0, 1 << 20, n), mask=stuck),
        "value": rng.random(n),
        "n_optimal": rng.integers(1, 3, n).astype(np.int16),
        "n_moves": rng.integers(0, 9, n).astype(np.int16),
    }


def one_writer(groups: list[pa.Table], schema: pa.Schema, options: dict) -> bytes:
    """The file pyarrow's ParquetWriter writes given ``groups`` one row group each."""
    sink = io.BytesIO()
    writer = pq.ParquetWriter(sink, schema, store_schema=False, **copy.deepcopy(options))
    writer.add_key_value_metadata(META)
    for t in groups:
        writer.write_table(t, row_group_size=t.num_rows)
    writer.close()
    return sink.getvalue()


def spliced(groups: list[pa.Table], schema: pa.Schema, options: dict) -> bytes:
    """The same row groups encoded apart and spliced."""
    parts = [splice.encode_part(t, schema, options, META) for t in groups]
    out, found, rows = bytearray(splice.MAGIC), [], 0
    for p in parts:
        found += splice.shifted(p.meta.get(splice.FILE_ROW_GROUPS)[1], len(out) - 4, len(found))
        out += bytes(p.chunks)
        rows += p.rows
    first = parts[0] if parts else splice.encode_part(None, schema, options, META)
    return bytes(out + splice.footer(first.meta, found, rows))


def table_schema() -> tuple[pa.Schema, dict]:
    schema = stream_writer._physical(schemas()["policy"], {"variant": "v"})
    return schema, parquet_options()["policy"]


def as_table(cols: dict, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches([stream_writer.record_batch(cols, schema, {"variant": "v"})])


def test_a_spliced_file_is_the_single_writers_byte_for_byte() -> None:
    schema, options = table_schema()
    groups = [as_table(policy_rows(n, i), schema) for i, n in enumerate([5000, 1, 12000, 700])]
    assert spliced(groups, schema, options) == one_writer(groups, schema, options)
    assert spliced([], schema, options) == one_writer([], schema, options)  # no rows at all


def test_thrift_reads_and_writes_a_footer_unchanged() -> None:
    schema, options = table_schema()
    data = one_writer([as_table(policy_rows(3000, 1), schema)], schema, options)
    size = int.from_bytes(data[-8:-4], "little")
    body = data[-8 - size : -8]
    meta = thrift.loads(body)
    assert thrift.dumps(meta) == body
    assert meta.get(splice.FILE_NUM_ROWS) == 3000
    # a field id jump over 15 and a long list take the long forms; both read back
    s = thrift.Struct([[1, thrift.I32, -5], [40, thrift.LIST, (thrift.I64, list(range(20)))]])
    assert thrift.loads(thrift.dumps(s)) == s


def test_page_indexes_are_refused() -> None:
    sink = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2, 3]}), sink, write_page_index=True)
    with pytest.raises(ValueError, match="page indexes"):
        splice.read_part(sink.getvalue())


@pytest.mark.parametrize("threads", ["1", "4"])
def test_streamed_tables_are_the_same_bytes_on_any_number_of_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: str
) -> None:
    monkeypatch.setenv(stream_writer.THREADS_ENV, threads)
    monkeypatch.setattr(stream_writer, "ROW_GROUP_ROWS", 4000)
    sizes = [1500, 2600, 3000, 10, 5000, 999]
    batches = [{"policy": policy_rows(n, i)} for i, n in enumerate(sizes)]
    path = tmp_path / f"policy-{threads}.parquet"
    digests: dict[str, str] = {}
    rows = stream_writer.write_streamed_many(
        {"policy": path},
        iter(batches),
        {"policy": schemas()["policy"].with_metadata(META)},
        {"policy": {"variant": "v"}},
        {"policy": parquet_options()["policy"]},
        digests,
    )
    data = path.read_bytes()
    assert rows == {"policy": sum(sizes)}
    assert digests["policy"] == hashlib.sha256(data).hexdigest()
    # the single writer, given the row groups the stream cut: batches gathered until they hold
    # 4000 rows or more (1500 + 2600; 3000 + 10 + 5000), then the rest (999)
    schema, options = table_schema()
    whole = pa.concat_tables([as_table(b["policy"], schema) for b in batches])
    cuts = [0, 4100, 12110, 13109]
    groups = [whole.slice(lo, hi - lo) for lo, hi in itertools.pairwise(cuts)]
    assert data == one_writer(groups, schema, options)
    # one ordinary table to every reader
    read = pq.read_table(path)
    assert read.num_rows == sum(sizes) and pq.ParquetFile(path).metadata.num_row_groups == 3
    assert pl.read_parquet(path).height == sum(sizes)
    sql = f"select count(*), sum(state_id) from '{path}'"
    assert duckdb.sql(sql).fetchall() == [(sum(sizes), int(whole["state_id"].to_numpy().sum()))]
    assert read.column("value").to_numpy().tolist() == whole["value"].to_numpy().tolist()


def test_an_encoders_error_reaches_the_producer_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(stream_writer.THREADS_ENV, "2")
    monkeypatch.setattr(stream_writer, "ROW_GROUP_ROWS", 100)
    good = {"policy": policy_rows(150, 1)}
    bad = {"policy": {**policy_rows(150, 2), "no_such_column": np.zeros(150)}}
    path = tmp_path / "policy.parquet"
    with pytest.raises(ValueError, match="no_such_column"):
        stream_writer.write_streamed_many(
            {"policy": path},
            iter([good, bad, good, good]),
            {"policy": schemas()["policy"]},
            {"policy": {"variant": "v"}},
            {"policy": parquet_options()["policy"]},
        )
    assert list(tmp_path.iterdir()) == []


def test_write_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(stream_writer.THREADS_ENV, "16")
    assert stream_writer.write_threads() == 16
    monkeypatch.delenv(stream_writer.THREADS_ENV)
    assert stream_writer.write_threads() >= 1
    monkeypatch.setenv(stream_writer.THREADS_ENV, "many")
    with pytest.raises(UsageError, match=stream_writer.THREADS_ENV):  # one line, exit 2
        stream_writer.write_threads()


def store_policy(n: int, seed: int) -> tuple[pa.Schema, dict, dict[str, np.ndarray]]:
    """The policy as a big box's build writes it: the store's every column (lists, texts), its
    constants (the variant, and null for what the batches leave out) and a batch of rows."""
    from pipeline.stages.streamed import written_schema

    schema = written_schema("policy", None, META)
    constants = {**dict.fromkeys(schema.names), "variant": "v"}
    cols = {k: v for k, v in policy_rows(n, seed).items() if k not in ("stuck", "next_state_id")}
    return stream_writer._physical(schema, constants), constants, cols


def test_a_row_group_spliced_from_parts_of_its_columns_is_the_whole_ones() -> None:
    schema, constants, cols = store_policy(3000, 1)
    options = parquet_options()["policy"]
    table = pa.Table.from_batches([stream_writer.record_batch(cols, schema, constants)])
    given = [n for n in schema.names if n in cols]
    rest = [n for n in schema.names if n not in cols]  # between the given ones: lists, texts
    parts = [
        (splice.encode_part(table.select(names), pa.schema([schema.field(n) for n in names]),
                            options, META), names)
        for names in (rest, given)
    ]  # fmt: skip
    empty = splice.encode_part(None, schema, options, META)
    got = splice.merged(parts, schema.names, empty)
    want = splice.encode_part(table, schema, options, META)
    assert bytes(got.chunks) == bytes(want.chunks)
    assert thrift.dumps(got.meta) == thrift.dumps(want.meta)
    assert got.rows == want.rows == 3000
    rest_schema = pa.schema([schema.field(n) for n in rest])
    shorter = splice.encode_part(table.slice(0, 10).select(rest), rest_schema, options, META)
    with pytest.raises(ValueError, match="different rows"):
        splice.merged([(shorter, rest), parts[1]], schema.names, empty)


def test_constant_columns_are_encoded_once_per_row_group_size_and_give_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(stream_writer.THREADS_ENV, "2")
    monkeypatch.setattr(stream_writer, "ROW_GROUP_ROWS", 1000)
    made: list[int] = []
    encode = splice.encode_part

    def counted(table, schema, options, metadata):
        if table is not None and "state_id" not in schema.names:
            made.append(table.num_rows)
        return encode(table, schema, options, metadata)

    monkeypatch.setattr(splice, "encode_part", counted)
    schema, constants, _ = store_policy(1, 0)
    sizes = [1000, 1000, 400, 600, 1000, 1000, 1200, 1000, 7]
    batches = [store_policy(n, i)[2] for i, n in enumerate(sizes)]
    path = tmp_path / "policy.parquet"
    stream_writer.write_streamed_many(
        {"policy": path},
        ({"policy": b} for b in batches),
        {"policy": store_policy(1, 0)[0].with_metadata(META)},
        {"policy": constants},
        {"policy": parquet_options()["policy"]},
    )
    # row groups of 1000 rows (six of them), 1200 and 7: their constant columns encoded once
    # each size (two threads may both encode a size at once)
    assert sorted(set(made)) == [7, 1000, 1200] and made.count(1000) <= 2
    cuts = [0, 1000, 2000, 3000, 4000, 5000, 6200, 7200, 7207]
    whole = pa.concat_tables(
        [pa.Table.from_batches([stream_writer.record_batch(b, schema, constants)]) for b in batches]
    )
    groups = [whole.slice(lo, hi - lo) for lo, hi in itertools.pairwise(cuts)]
    assert path.read_bytes() == one_writer(groups, schema, parquet_options()["policy"])
    read = pl.read_parquet(path)
    assert read.height == sum(sizes) and read["tiles"].null_count() == sum(sizes)
    assert read["variant"].unique().to_list() == ["v"]


@pytest.mark.parametrize(
    ("data", "kind", "mask"),
    [
        (np.arange(5, dtype=np.int16), pa.int16(), None),
        (np.arange(5, dtype=np.int32), pa.int32(), np.array([0, 1, 0, 0, 1], bool)),
        (np.array([True, False, True] * 7), pa.bool_(), None),
        (np.array([True, False, True] * 7), pa.bool_(), np.arange(21) % 4 == 0),
        (np.arange(10.0)[::2], pa.float64(), None),  # not contiguous: pa.array copies it
        (np.arange(5, dtype=np.int64), pa.int16(), None),  # a cast: pa.array
        (np.zeros(0, np.int64), pa.int64(), None),
    ],
)
def test_numpy_columns_are_what_pa_array_makes(data, kind, mask) -> None:
    got = stream_writer.numpy_column(data, kind, mask)
    want = pa.array(data, type=kind, mask=mask)
    assert got.type == kind and got.equals(want) and got.null_count == want.null_count


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (pa.string(), "score"),
        (pa.string(), None),
        (pa.list_(pa.int8()), None),
        (pa.bool_(), False),
        (pa.float64(), 0.0),
        (pa.int16(), 3),
        (pa.dictionary(pa.int32(), pa.string()), "stb-24t-3d6-score"),
    ],
)
def test_constant_columns_are_the_value_repeated(kind, value) -> None:
    got = stream_writer.constant_column(pa.field("c", kind), value, 5)
    plain = kind.value_type if pa.types.is_dictionary(kind) else kind
    assert got.type == kind and got.to_pylist() == [value] * 5
    assert got.cast(plain).equals(pa.array([value] * 5, type=plain))


def test_writing_a_streamed_table_does_not_import_pandas(tmp_path: Path) -> None:
    """pa.array and pa.scalar import pandas on their first call: a second of a small build."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from pathlib import Path\n"
        "from pipeline.games.shutbox.stream import schemas\n"
        "from pipeline.store import stream_writer\n"
        "cols = {'state_id': np.arange(9), 'roll': np.full(9, 3, np.int16),\n"
        "        'stuck': np.zeros(9, bool), 'value': np.zeros(9)}\n"
        "const = {'variant': 'v', 'best_move_mask': None, 'next_state_id': None,\n"
        "         'n_optimal': 1, 'n_moves': 2}\n"
        "stream_writer.write_streamed_many({'p': Path(sys.argv[1])}, [{'p': cols}],\n"
        "                                  {'p': schemas()['policy']}, {'p': const})\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "p.parquet")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "False"
    assert pq.read_table(tmp_path / "p.parquet").num_rows == 9
