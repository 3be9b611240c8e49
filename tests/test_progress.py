"""Progress of long jobs (issue 16): plain lines on a pipe, nothing for quick jobs, nothing with
--quiet, and a custom rule set named by the name the program prints."""

from __future__ import annotations

import io
import time
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from pipeline import progress


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs show after 0.1 s and write a line every 0.2 s (instead of 2 s and 5 s)."""
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.1)
    monkeypatch.setattr(progress, "INTERVAL", 0.2)
    progress.set_quiet(False)


def run_job(seconds: float, steps: int = 4) -> str:
    """Run a job of ``steps`` steps taking ``seconds`` in all; what it wrote on stderr."""
    err = io.StringIO()
    with redirect_stderr(err), progress.task("build", total=steps, unit="variants") as outer:
        with progress.task("classic: solve", total=steps, unit="ranks") as job:
            for _ in range(steps):
                time.sleep(seconds / steps)
                job.advance()
        outer.advance(steps)
    return err.getvalue()


def test_a_long_job_writes_what_how_far_rate_and_elapsed(fast: None) -> None:
    lines = run_job(0.8).splitlines()
    assert lines, "a job longer than SHOW_AFTER says something"
    running = [line for line in lines if "done" not in line]
    assert running and running[0].startswith("build > classic: solve: ")
    assert "ranks (" in running[0] and "ranks/s" in running[0] and running[0].endswith(" s")
    assert any(line.startswith("build > classic: solve: done, 4/4 ranks (100 %)") for line in lines)


def test_a_quick_job_and_a_quiet_one_write_nothing(fast: None) -> None:
    assert run_job(0.01) == ""
    progress.set_quiet(True)
    try:
        assert run_job(0.5) == ""
    finally:
        progress.set_quiet(False)


def test_build_quiet_flag_and_plain_lines(
    cli, tmp_path: Path, fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every job shows at once: with warm caches a classic build can take under fast's 0.1 s.
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    loud = cli(["build", "--variant", "classic", "-d", tmp_path / "a"])
    assert loud.code == 0 and "build" in loud.stderr
    quiet = cli(["build", "--variant", "classic", "-d", tmp_path / "b", "--quiet"])
    assert quiet.code == 0 and quiet.stderr == ""
    assert "classic" in quiet.stdout


def test_a_custom_rule_set_is_named_by_the_name_build_prints(cli, tmp_path: Path) -> None:
    built = cli(["build", "--tiles", "6", "--dice", "1", "-d", tmp_path, "-q"])
    assert built.code == 0 and "stb-6t-1d6-shut" in built.stdout
    answer = cli(["expect", "--variant", "stb-6t-1d6-shut", "123456", "-d", tmp_path])
    # six tiles, always one die: 145/1944 (The Fiddler, 13 Sep 2024; PUBLISHED.md)
    assert answer.code == 0 and abs(float(answer.stdout) - 145 / 1944) < 1e-12
    named = cli(["build", "--tiles", "6", "--dice", "1", "--name", "six", "-d", tmp_path, "-q"])
    assert named.code == 0
    again = cli(["move", "--variant", "six", "123456", "6", "-d", tmp_path])
    assert again.code == 0 and "best move [6]" in again.stdout
    listed = cli(["variants", "-d", tmp_path])
    assert "six" in listed.stdout and "stb-6t-1d6-shut" in listed.stdout
    rebuilt = cli(["build", "--variant", "stb-6t-1d6-shut", "-d", tmp_path, "-q"])
    assert rebuilt.code == 0 and "unchanged" in rebuilt.stdout


@pytest.mark.parametrize(
    ("error", "ended"), [(OSError, "failed"), (KeyboardInterrupt, "interrupted")]
)
def test_a_job_that_raises_never_says_done(
    fast: None, error: type[BaseException], ended: str
) -> None:
    """Issue 41: a build whose commit met a full disk printed "build: done, ... 100 %" just
    before its error line."""
    err = io.StringIO()
    with (
        redirect_stderr(err),
        pytest.raises(error),
        progress.task("build", total=2, unit="variants") as job,
    ):
        job.advance(2)
        time.sleep(0.3)
        raise error("no space left on device")
    last = err.getvalue().splitlines()[-1]
    assert last.startswith(f"build: {ended}, 2/2 variants (100 %)"), err.getvalue()
    assert "done" not in err.getvalue()
