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


#: What `doors` adds to the build of every variant: an N-player game and a big box, each stored
#: in files of its own (the box's tile columns left to the reader, with its moves and edges).
DOOR_BUILDS = [
    [
        *("--players", "3", "--tiles", "5", "--sides", "4"),
        *("--one-die", "forced", "--one-die-sum", "4", "--name", "three-small"),
    ],
    ["--tiles", "13", "--objective", "score", "--moves", "--edges"],
]
#: A variant of each kind of file `doors` holds: shared (one player, two players,
#: Knucklebones), stored on its own (N-player), and a big box.
DOOR_VARIANTS = ["classic", "two-player", "knucklebones-2x2", "three-small", "stb-13t-2d6-score"]


@pytest.fixture(scope="session")
def doors(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `built` with the variants of DOOR_BUILDS added (a copy: `built` stays as the
    plain build): every kind of table file the readers (catalog, polars, pyarrow) meet."""
    import shutil

    data = tmp_path_factory.mktemp("doors") / "data"
    shutil.copytree(built, data)
    for args in DOOR_BUILDS:
        result = invoke(["build", *args, "--data-dir", data, "--quiet"])
        assert result.code == 0, result.stderr
    return data
