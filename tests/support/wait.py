"""Waiting for another thread or process to reach a point: poll a condition with a deadline,
never sleep a fixed time (docs/architecture.md, "Where the tests live"; a test holds it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float = 30.0, step: float = 0.02) -> T:
    """``condition()``'s first true value, asked every ``step`` seconds; AssertionError after
    ``timeout`` seconds without one."""
    end = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > end:
            raise AssertionError(f"not so within {timeout} s: {condition}")
        time.sleep(step)
