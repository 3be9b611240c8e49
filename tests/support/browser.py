"""Headless Chromium for the page tests (the offline explorer and the served page).

Debian's chromium and chromium-driver, as .ci/run installs them; a test that asks for the browser
is skipped with the reason when either (or selenium) is missing, and fails in CI
(tests/support/ci.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.ci import cannot_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
#: Without the background-networking flags Chromium's calls home are refused by this closed network.
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,1000",
)


def headless_chromium(profile: Path) -> Iterator[Any]:
    """A selenium driver of headless Chromium with its own empty ``profile`` folder, quit at the
    end; skips the calling test (fails it in CI) when the browser, its driver or selenium is
    missing."""
    if CHROMIUM is None or DRIVER is None:
        cannot_run("no browser: install chromium and chromium-driver (see .ci/browser.sh)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        cannot_run("selenium is not installed: pip install '.[test]'")

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    try:
        yield driver
    finally:
        driver.quit()
