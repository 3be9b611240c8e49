"""Result files: `-o` onto a symlink or a pipe writes through it, never replaces it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pipeline.store.files import write_bytes_atomic


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
