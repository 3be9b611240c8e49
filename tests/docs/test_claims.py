"""Claims docs/architecture.md makes about the tests themselves, held by a test (issue 39)."""

from __future__ import annotations

import ast

from tests.conftest import REPO

#: A sleep this long or longer, not inside a loop, is a wait for something: poll it instead.
LONGEST_PAUSE = 0.5


def fixed_waits(source: str) -> list[int]:
    """The lines of ``source`` that sleep a fixed time of at least :data:`LONGEST_PAUSE`
    seconds outside a loop (``time.sleep(1.1)`` "for the catalog to look again")."""
    tree = ast.parse(source)
    looped = {
        id(inner)
        for loop in ast.walk(tree)
        if isinstance(loop, ast.For | ast.While | ast.AsyncFor)
        for inner in ast.walk(loop)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func).endswith("sleep")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, int | float)
        and node.args[0].value >= LONGEST_PAUSE
        and id(node) not in looped
    ]


def test_no_test_waits_a_fixed_time() -> None:
    """'a test that waits for another thread or process to reach a point waits for it (an
    event, or polling with a deadline), not for a fixed time' (tests/support/wait.py)."""
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for line in fixed_waits(path.read_text())
    ]
    assert not found, found


def test_a_fixed_wait_is_seen() -> None:
    source = "import time\ntime.sleep(1.1)\nwhile True:\n    time.sleep(1.0)\ntime.sleep(0.01)\n"
    assert fixed_waits(source) == [2]
