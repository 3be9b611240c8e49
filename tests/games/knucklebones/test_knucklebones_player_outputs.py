"""The players' commands (`label`, `train`, `book`, `rate`) and the files they write (issue 48):
the one rule of every -o before any work (never a data directory's own files, an existing file
only with --force, a pipe written to and kept), an empty name refused, their help true about
the default board, and `rate` storing rows only where its board is built."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from pipeline.games.knucklebones.game import KnuckleRules
from pipeline.games.knucklebones.players import artefacts
from tests.conftest import invoke

VARIANT = "knucklebones-2x2"
#: Each players' command that writes -o, small enough to run here, with ``{out}`` for its file.
WRITERS = [
    ["label", "-v", VARIANT, "--games", "20", "--uniform", "20", "--solve", "-o", "{out}"],
    ["book", "-v", VARIANT, "--plies", "2", "--solve", "-o", "{out}"],
]


def _args(args: list[str], out: object, data: Path) -> list[str]:
    return ["knucklebones", *[a.replace("{out}", str(out)) for a in args], "-d", data, "-q"]


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != ".stb.lock"
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kb-data")
    assert invoke(["build", "-v", VARIANT, "-q", "-d", folder]).code == 0
    return folder


@pytest.mark.parametrize("args", WRITERS, ids=lambda a: a[0])
def test_a_data_directorys_own_files_are_never_written(
    data: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`label -o DATA/states.parquet` exited 0 and the data directory no longer verified."""
    from pipeline.apps.knucklebones import distill

    monkeypatch.setattr(distill, "exact_values", _never)  # refused before any work
    monkeypatch.setattr(distill, "label", _never)
    before = _hashes(data)
    for name in ("states.parquet", "manifest.json", "stb.duckdb", "policy.parquet"):
        found = invoke([*_args(args, data / name, data), "--force"])
        assert found.code == 2 and "keeps its tables" in found.stderr, found.stderr
    assert _hashes(data) == before
    assert invoke(["verify", "-d", data, "-q"]).code == 0


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the work ran before its output was checked")


@pytest.mark.parametrize("args", WRITERS, ids=lambda a: a[0])
def test_an_existing_file_is_kept_without_force_and_replaced_with_it(
    data: Path, tmp_path: Path, args: list[str]
) -> None:
    mine = tmp_path / "mine.bin"
    mine.write_bytes(b"mine")
    refused = invoke(_args(args, mine, data))
    assert refused.code == 2 and "add --force" in refused.stderr
    assert mine.read_bytes() == b"mine"
    replaced = invoke([*_args(args, mine, data), "--force"])
    assert replaced.code == 0, replaced.stderr
    assert mine.read_bytes() != b"mine"


@pytest.mark.parametrize("args", WRITERS, ids=lambda a: a[0])
def test_a_pipe_is_written_to_and_stays_a_pipe(data: Path, tmp_path: Path, args: list[str]) -> None:
    """`-o` onto a FIFO (or /dev/null) replaced it with a regular file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    found = invoke(_args(args, fifo, data))
    assert found.code == 0, found.stderr
    reader.join(timeout=60)
    assert fifo.is_fifo() and got and got[0][:2] in (b"PA", b"PK")  # Parquet, or .npz's zip
    assert invoke(_args(args, "/dev/null", data)).code == 0
    assert Path("/dev/null").is_char_device()


def test_a_folder_that_takes_no_file_is_found_before_the_work(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.apps.knucklebones import distill

    monkeypatch.setattr(distill, "exact_values", _never)
    found = invoke(_args(WRITERS[1], "/proc/book.npz", data))
    assert found.code == 1 and "/proc takes no new file" in found.stderr


@pytest.mark.parametrize("command", ["label", "train", "book", "rate"])
def test_the_help_names_the_default_board(command: str) -> None:
    """Their help said -v defaulted to the full game; it is 3x3-d4."""
    text = " ".join(invoke(["knucklebones", command, "--help"]).stdout.split())
    assert "(default: knucklebones-3x3-d4)" in text and "default: the full game" not in text


def test_rate_stores_rows_only_where_its_board_is_built(data: Path, tmp_path: Path) -> None:
    """`rate --write` stored rows of a board not built there, which `query knucklebones_players`
    then called not built."""
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    before = _hashes(copy)
    rate = ["knucklebones", "rate", "--players", "greedy", "--decisions", "10", "--games", "20"]
    asked = invoke([*rate, "-v", "knucklebones-3x2", "--write", "-d", copy, "-q"])
    assert asked.code == 2 and "knucklebones-3x2 is not built" in asked.stderr
    quiet = invoke([*rate, "-v", "knucklebones-2x3", "--solve", "-d", copy, "-q"])
    assert quiet.code == 0, quiet.stderr
    assert "rows not stored: knucklebones-2x3 is not built" in quiet.stdout
    assert _hashes(copy) == before
    stored = invoke([*rate, "-v", VARIANT, "-d", copy, "-q"])
    assert stored.code == 0 and "rows written to" in stored.stdout
    rows = invoke(["query", "knucklebones_players", "-v", VARIANT, "-d", copy, "-f", "csv"])
    assert rows.code == 0 and "greedy" in rows.stdout


def test_the_written_artefacts_read_back(data: Path, tmp_path: Path) -> None:
    book = tmp_path / "b.npz"
    assert invoke(_args(WRITERS[1], book, data)).code == 0
    assert len(artefacts.read_book(book, KnuckleRules(2, 2, 6))) > 1
