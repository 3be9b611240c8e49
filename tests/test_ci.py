""".ci/: the skip check that ends a CI run, and the browser check that starts it (issue 34).

In CI no test may skip but the one that needs a real GPU (.ci/check_skips.py reads pytest's
JUnit report and names every other skip), and a missing browser stops the run before the tests
(.ci/browser.sh) instead of letting 30 browser tests skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.ci import cannot_run, in_ci

CHECK = REPO / ".ci" / "check_skips.py"
GPU_TEST = "tests/games/knucklebones/test_knucklebones_gpu.py::test_real_gpu_equals_the_cpu_on_2x2"


def check(report: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHECK), str(report)], capture_output=True, text=True, timeout=60
    )


def junit(tmp_path: Path, cases: str) -> Path:
    """A JUnit report (xunit1, as pytest writes it) holding ``cases``."""
    path = tmp_path / "junit.xml"
    path.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return path


def case(node: str, skip: str | None = None) -> str:
    """One ``testcase`` of a test function (no class) named by its node id."""
    file, name = node.split("::")
    module = file.removesuffix(".py").replace("/", ".")
    body = f'<skipped type="pytest.skip" message="{skip}">x</skipped>' if skip else ""
    return f'<testcase classname="{module}" name="{name}" file="{file}">{body}</testcase>'


def test_the_gpu_skip_alone_passes(tmp_path: Path) -> None:
    report = junit(
        tmp_path, case(GPU_TEST, "needs a CUDA GPU: none on this machine") + case("tests/a.py::b")
    )
    result = check(report)
    assert result.returncode == 0, result.stderr
    assert f"skipped (expected): {GPU_TEST}: needs a CUDA GPU" in result.stdout
    assert "2 tests, 1 skipped, as expected" in result.stdout


def test_the_gpu_test_may_run_where_there_is_a_gpu(tmp_path: Path) -> None:
    result = check(junit(tmp_path, case(GPU_TEST)))
    assert result.returncode == 0, result.stderr
    assert f"ran (expected to skip without a GPU): {GPU_TEST}" in result.stdout


def test_any_other_skip_fails_the_run_naming_it(tmp_path: Path) -> None:
    other = "tests/apps/test_explorer.py::test_page[four-player]"
    report = junit(tmp_path, case(GPU_TEST, "no GPU") + case(other, "no browser"))
    result = check(report)
    assert result.returncode == 1
    assert f"skipped (unexpected): {other}: no browser" in result.stdout
    assert "1 test(s) skipped besides the 1 expected (of 2)" in result.stderr
    assert other in result.stderr and GPU_TEST not in result.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "cannot read the test report"),
        ("<testsuites>", "cannot read the test report"),
        ("<testsuites><testsuite/></testsuites>", "holds no test"),
    ],
)
def test_a_missing_or_empty_report_fails(tmp_path: Path, text: str | None, says: str) -> None:
    report = tmp_path / "junit.xml"
    if text is not None:
        report.write_text(text)
    result = check(report)
    assert result.returncode == 1 and says in result.stderr


def test_node_ids_are_pytests_own(tmp_path: Path) -> None:
    # A real report: a skip in a class and a parametrized one are named as pytest names them.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_x.py").write_text(
        "import pytest\n"
        "class TestA:\n"
        "    def test_b(self):\n"
        "        pytest.skip('in a class')\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_p(n):\n"
        "    if n == 2:\n"
        "        pytest.skip('the second')\n"
    )
    report = tmp_path / "junit.xml"
    args = ["-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml", str(report)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "pkg/test_x.py", "-rs", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    result = check(report)
    assert result.returncode == 1
    named = [line.split(": ")[2] for line in result.stdout.splitlines() if "skipped (" in line]
    assert named == ["pkg/test_x.py::TestA::test_b", "pkg/test_x.py::test_p[2]"]


def test_the_expected_skip_is_a_test_of_the_suite() -> None:
    # renamed or moved, it would make every CI run fail: keep .ci/check_skips.py in step
    text = CHECK.read_text()
    assert f'"{GPU_TEST}"' in text
    file, name = GPU_TEST.split("::")
    assert f"def {name}(" in (REPO / file).read_text()


def browser_check(path: Path) -> subprocess.CompletedProcess:
    """.ci/browser.sh with nothing on PATH but ``path`` (so no apt-get: nothing is installed)."""
    return subprocess.run(
        ["/bin/bash", str(REPO / ".ci" / "browser.sh")],
        env={"PATH": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_browser_stops_the_run(tmp_path: Path) -> None:
    result = browser_check(tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("ci: error: no chromium and chromedriver")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_browser_and_its_driver_pass(tmp_path: Path) -> None:
    for name in ("chromium", "chromedriver"):
        fake = tmp_path / name
        fake.write_text("#!/bin/sh\n")
        fake.chmod(0o755)
    result = browser_check(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{tmp_path}/chromium" in result.stdout and f"{tmp_path}/chromedriver" in result.stdout


def test_cannot_run_skips_here_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not in_ci()
    with pytest.raises(pytest.skip.Exception, match="no widget"):
        cannot_run("no widget")
    monkeypatch.setenv("CI", "true")
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match=r"no widget \(CI is set"):
        cannot_run("no widget")
