"""Result files: `-o` onto a symlink or a pipe writes through it, never replaces it; and the one
rule every `-o` of the package follows (:func:`pipeline.store.outputs.check_output`)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pipeline.errors import PipelineError, UsageError
from pipeline.store.files import write_bytes_atomic
from pipeline.store.outputs import check_output, check_output_folder


def test_a_symlink_keeps_pointing_at_the_file_it_names(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_bytes_atomic(link, b"new\n")
    assert link.is_symlink()
    assert real.read_text() == "new\n"


def test_a_pipe_is_written_straight_to_and_stays_a_pipe(tmp_path: Path) -> None:
    # `-o /dev/stdout` in a pipeline: renaming over it would replace /dev/stdout itself
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_bytes_atomic(fifo, b"a,b\n1,2\n")
    reader.join(timeout=10)
    assert got == [b"a,b\n1,2\n"]
    assert fifo.is_fifo()


# -- the one rule of every -o (issue 48): checked before the work -------------------------------


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A folder that looks like a data directory (its lock, manifest and catalog)."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name in (".stb.lock", "manifest.json", "stb.duckdb", "states.parquet"):
        (folder / name).write_text("x")
    return folder


@pytest.mark.parametrize(
    "name",
    ["states.parquet", "new.parquet", "manifest.json", "stb.duckdb", ".stb.lock", "variants/a/b"],
)
def test_a_data_directorys_own_files_are_refused_named_or_not(
    data: Path, tmp_path: Path, name: str
) -> None:
    for given in (data, None, tmp_path / "elsewhere"):  # the -d given, or found above the path
        with pytest.raises(UsageError, match="keeps its tables"):
            check_output(data / name, given, force=True)
    assert (data / "states.parquet").read_text() == "x"


def test_a_file_of_its_own_inside_a_data_directory_is_fine(data: Path) -> None:
    check_output(data / "by_sum.csv", data, force=False)  # docs/commands.md's example
    check_output(data / "report" / "page.html", data, force=False)


def test_an_exported_datasets_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dataset.json").write_text("{}")
    (tmp_path / "SHA256SUMS").write_text("")
    with pytest.raises(UsageError, match="exported dataset"):
        check_output(tmp_path / "extra.csv", None, force=True)


def test_an_existing_file_is_replaced_only_with_force(tmp_path: Path) -> None:
    old = tmp_path / "old.csv"
    old.write_text("mine")
    with pytest.raises(UsageError, match="exists: add --force"):
        check_output(old, None, force=False)
    check_output(old, None, force=True)
    check_output(old, None, force=False, replace=True)  # a command's own default file
    link = tmp_path / "link.csv"
    link.symlink_to(old)
    with pytest.raises(UsageError, match="exists: add --force"):
        check_output(link, None, force=False)


@pytest.mark.parametrize("where", [".", "/", "folder"])
def test_a_folder_is_no_file_name(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(UsageError, match="is a folder"):
        check_output(Path(where), None, force=True)


def test_devices_and_pipes_need_no_force_and_are_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    check_output(fifo, None, force=False)  # does not open it (that would wait for a reader)
    check_output(Path("/dev/null"), None, force=False)
    assert fifo.is_fifo()


def test_a_link_that_loops_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(UsageError, match="points back at itself"):
        check_output(loop, None, force=True)
    with pytest.raises(UsageError, match="points back at itself"):
        check_output_folder(loop / "inner")


def test_a_folder_that_takes_no_file_is_found_before_the_work(tmp_path: Path) -> None:
    # /proc takes no new file, even from root (a read-only mount or an immutable folder the same)
    with pytest.raises(PipelineError, match=r"cannot write /proc/result\.csv: /proc takes no new"):
        check_output(Path("/proc/result.csv"), None, force=False)
    with pytest.raises(PipelineError, match="cannot write /proc/report: /proc takes no new file"):
        check_output_folder(Path("/proc/report"))
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(PipelineError, match="is a file, not a folder"):
        check_output(file / "a" / "b.csv", None, force=False)
    assert not list(tmp_path.glob(".stb-probe-*"))  # the probe leaves nothing behind
    check_output(tmp_path / "new" / "deeper" / "x.csv", None, force=False)
    assert not (tmp_path / "new").exists()  # made by the write, not by the check
