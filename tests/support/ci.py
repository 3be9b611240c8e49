"""Whether the tests run in CI, where a test that cannot run is a failure, not a skip.

CI's runner sets ``CI``, and so does ``.ci/run`` (a run by hand behaves as CI's). Elsewhere a
test that needs something missing here (a browser, the CUDA compiler wheels) skips, saying what
to install; in CI, which installs them, it fails. ``.ci/check_skips.py`` then fails the run on
any skip but the real-GPU test's.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether ``CI`` is set (to anything but the empty string)."""
    return bool(os.environ.get("CI"))


def cannot_run(reason: str) -> NoReturn:
    """Skip the calling test with ``reason``, or fail it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: a test that cannot run fails)", pytrace=False)
    pytest.skip(reason)
