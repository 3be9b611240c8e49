"""Shared fixtures: an in-process CLI runner and one build of every variant per test session."""

from __future__ import annotations

import io
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


#: The variants of :func:`built_more`: a game of four players and the stake game (stored on
#: their own, solved without a graph) and a 16-tile box (streamed; its moves table too, for the
#: tests to compare with), beside two-player.
MORE = ("two-player", "four-player", "two-player-stake")
BOX16 = "stb-16t-2d6-score"


@pytest.fixture(scope="session")
def built_more(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding :data:`MORE` and the 16-tile box :data:`BOX16` (built once
    per session: about 5 s)."""
    data = tmp_path_factory.mktemp("data-more")
    result = invoke(["build", "--variant", ",".join(MORE), "--data-dir", data])
    assert result.code == 0, result.stderr
    box = ["build", "--tiles", "16", "--objective", "score", "--moves", "--data-dir", data]
    result = invoke(box)
    assert result.code == 0, result.stderr
    return data
