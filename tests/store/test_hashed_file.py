"""pipeline.store.files.HashedFile: tables know their sha256 without being read back."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import files
from pipeline.store.files import HashedFile


def test_the_digest_is_the_files_sha256_and_the_bytes_reach_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(files, "SYNC_EVERY", 1000)  # sync in the background every 1,000 bytes
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    path = tmp_path / "t.parquet"
    out = HashedFile(path)
    table = pa.table({"a": list(range(50_000)), "b": [f"row {i}" for i in range(50_000)]})
    with pq.ParquetWriter(out.arrow_stream(), table.schema) as writer:
        writer.write_table(table, row_group_size=10_000)
    assert out.sha256 is None  # known once closed
    out.close()
    assert out.closed
    assert out.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert pq.read_table(path).equals(table)
    assert synced, "no background sync while writing"


def test_a_failed_background_sync_is_raised_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "SYNC_EVERY", 10)
    monkeypatch.setattr(os, "fdatasync", full)
    out = HashedFile(tmp_path / "t.bin")
    out.write(b"x" * 100)
    with pytest.raises(OSError, match="No space left"):
        out.close()
    assert out.sha256 is None


def test_abandon_closes_without_a_digest(tmp_path: Path) -> None:
    out = HashedFile(tmp_path / "t.bin")
    out.write(memoryview(b"partial"))
    out.abandon()
    out.abandon()  # twice is harmless
    assert out.closed and out.sha256 is None


def test_abandoning_under_a_live_writer_is_quiet_and_safe(tmp_path: Path) -> None:
    """A failed build drops its files while a ParquetWriter may still hold the stream: closing
    that writer afterwards, or collecting it, must neither crash nor print (pyarrow reports
    errors of a stream it destroys on stderr). Run apart, so that a crash fails the test."""
    import subprocess
    import sys

    code = f"""
import gc, pyarrow as pa, pyarrow.parquet as pq
from pipeline.store.files import HashedFile
table = pa.table({{"a": list(range(100_000))}})
out = HashedFile({str(tmp_path / "t.parquet")!r})
writer = pq.ParquetWriter(out.arrow_stream(), table.schema)
writer.write_table(table)
out.abandon()
writer.close()
del writer, out
gc.collect()
print("done")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done" and run.stderr == ""


def test_final_name_undoes_every_layer_of_temporary_names(tmp_path: Path) -> None:
    final = tmp_path / "variants" / "stb-20t" / "policy.parquet"
    once = files._tmp_name(final)
    assert files.final_name(once) == final
    assert files.final_name(files._tmp_name(once)) == final  # the streamed writer's tmp of a tmp
    assert files.final_name(final) == final
    assert files.final_name(tmp_path / ".hidden.parquet") == tmp_path / ".hidden.parquet"
