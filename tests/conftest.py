"""Shared fixtures: an in-process CLI runner and one build of every variant per test session."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.cli.app import run

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    """Exit code and captured output of one CLI call."""

    code: int
    stdout: str
    stderr: str


def invoke(args: list[str]) -> Result:
    """Run `stb-pipeline ARGS` in this process and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Callable[[list[str]], Result]:
    """The in-process CLI runner."""
    return invoke


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding `stb-pipeline build --variant all` (built once per session)."""
    data = tmp_path_factory.mktemp("data")
    result = invoke(["build", "--variant", "all", "--data-dir", data])
    assert result.code == 0, result.stderr
    return data


#: The N-player variants stored on their own, which `--variant all` leaves out (built by name).
BY_NAME = ("three-player", "four-player", "three-player-two-dice", "two-player-stake")
#: A small Knucklebones board written as the full game is (lean states and decisions), so that
#: the full-game queries have tables to read; ``-score`` is its score twin.
LEAN_BOARD = "kb-lean-2x2-d3"


@pytest.fixture(scope="session")
def built_by_name(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`built` with, beside `--variant all`, the variants built by name: the
    opt-in N-player games of :data:`BY_NAME` and the lean tables of :data:`LEAN_BOARD` (a 2x2
    board with a three-faced die). Every query of the library has its variant here."""
    from pipeline.games.knucklebones.game import KnuckleRules
    from tests.support.knucklebones_lean import write_lean_pair

    data = tmp_path_factory.mktemp("by-name") / "data"
    shutil.copytree(built, data)
    result = invoke(["build", "--variant", ",".join(BY_NAME), "--data-dir", data])
    assert result.code == 0, result.stderr
    write_lean_pair(data, LEAN_BOARD, KnuckleRules(2, 2, 3))
    return data
