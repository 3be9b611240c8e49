"""Fail a CI run whose tests skipped anything but the expected: the one test that needs a GPU.

Reads the JUnit XML that pytest wrote (``-o junit_family=xunit1 --junitxml FILE``: xunit1
records each test's file) and names every skipped test with its reason. The expected skip may
also have run (a machine with a GPU); any other skip fails the run, with exit code 1.

Usage: python .ci/check_skips.py FILE
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

#: The tests allowed to skip in CI, by pytest node id: a real GPU is not part of CI's machine.
EXPECTED = {
    "tests/games/knucklebones/test_knucklebones_gpu.py::test_real_gpu_equals_the_cpu_on_2x2",
}


def node_id(case: ET.Element) -> str:
    """The pytest node id of a JUnit ``testcase``: its file, its class (if any) and its name."""
    path = case.get("file", "")
    module = path.removesuffix(".py").replace("/", ".")
    owner = case.get("classname", "")
    inner = owner[len(module) + 1 :] if owner.startswith(module + ".") else ""
    parts = [path, *inner.split("."), case.get("name", "")]
    return "::".join(part for part in parts if part)


def skipped(report: Path) -> tuple[int, dict[str, str]]:
    """The number of tests in ``report`` and its skipped ones: node id -> reason."""
    root = ET.parse(report).getroot()
    cases = list(root.iter("testcase"))
    out = {}
    for case in cases:
        skip = case.find("skipped")
        if skip is not None:
            out[node_id(case)] = skip.get("message", "")
    return len(cases), out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/check_skips.py JUNIT_XML", file=sys.stderr)
        return 2
    try:
        total, found = skipped(Path(argv[0]))
    except (OSError, ET.ParseError) as exc:
        print(f"ci: error: cannot read the test report {argv[0]}: {exc}", file=sys.stderr)
        return 1
    if total == 0:
        print(f"ci: error: the test report {argv[0]} holds no test", file=sys.stderr)
        return 1
    unexpected = sorted(set(found) - EXPECTED)
    for name in sorted(found):
        tag = "unexpected" if name in unexpected else "expected"
        print(f"ci: skipped ({tag}): {name}: {found[name]}")
    ran = sorted(EXPECTED - set(found))
    for name in ran:
        print(f"ci: ran (expected to skip without a GPU): {name}")
    if unexpected:
        print(
            f"ci: error: {len(unexpected)} test(s) skipped besides the {len(EXPECTED)} expected "
            f"(of {total}); in CI only the real-GPU test may skip: {', '.join(unexpected)}",
            file=sys.stderr,
        )
        return 1
    print(f"ci: {total} tests, {len(found)} skipped, as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
