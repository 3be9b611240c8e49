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
