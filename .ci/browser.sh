#!/usr/bin/env bash
# A real browser for the page tests (the offline explorer, the served page): Chromium and its
# driver, as tests/support/browser.py looks for them. Installed with apt-get when missing and
# this runs as root; otherwise, or when the install fails, exit 1 naming what is missing: in CI
# a browser test that cannot run is a failure, not a skip.
#
# Usage: .ci/browser.sh      (exit 0: both found; 1: not, with one `ci: error:` line)
set -euo pipefail

found() {
    { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; } \
        && command -v chromedriver >/dev/null
}

if ! found && [ "$(id -u 2>/dev/null)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium chromium-driver >/dev/null || true
fi
if ! found; then
    echo "ci: error: no chromium and chromedriver on PATH (and they could not be installed:" \
        "apt-get install chromium chromium-driver as root); the browser tests cannot run" >&2
    exit 1
fi
echo "ci: browser: $(command -v chromium || command -v chromium-browser)," \
    "$(command -v chromedriver)"
