"""First paint of the served pages in headless Chromium (issue 34: measured here, not asserted
in the tests).

`stb-pipeline serve` runs as its own process over a small build (classic and knucklebones-2x2,
built into a temporary directory unless ``--data-dir`` is given); headless Chromium loads each
page ``--repeats`` times (about:blank in between) and reads the Performance API: first
contentful paint and the load event, both from the start of navigation. The page embeds its
answer, so it paints without a second request.

The baseline, in the same run and the same browser: a one-line static HTML page served by
Python's http.server in this process, the browser's own floor for a navigation and a paint.
The ratio is a page's median first paint over the baseline's. Memory: the server's resident
set, peak in brackets (from /proc). Target (issue 25): first paint <= 1 s.

Usage: python benchmarks/bench_first_paint.py [--data-dir DIR] [--repeats 5]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_serve import free_port, peak_mb  # noqa: E402

#: The pages measured: a box position with a roll, a Knucklebones position with a die.
PAGES = {
    "classic": "/classic/position?tiles=12345&roll=7",
    "knucklebones-2x2": "/knucklebones-2x2/position?board=4_/1_;_/3_&die=3",
}
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--window-size=1200,1000")  # fmt: skip
TIMING = """
const nav = performance.getEntriesByType('navigation')[0];
const paint = performance.getEntriesByName('first-contentful-paint')[0];
return [paint ? paint.startTime : null, nav ? nav.loadEventEnd : null];
"""


def browser() -> Any:
    """Headless Chromium driven by selenium; SystemExit naming what is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        raise SystemExit("needs chromium and chromedriver on PATH (see .ci/browser.sh)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def timings(driver: Any, url: str, repeats: int) -> tuple[list[float], list[float]]:
    """First contentful paint and load event end (ms) of ``repeats`` fresh loads of ``url``."""
    paints, loads = [], []
    for _ in range(repeats):
        driver.get("about:blank")
        driver.get(url)
        for _ in range(200):  # the paint entry comes once the frame is drawn
            paint, load = driver.execute_script(TIMING)
            if paint is not None and load:
                break
            time.sleep(0.01)
        if paint is None:
            raise SystemExit(f"{url}: no first-contentful-paint entry")
        paints.append(paint)
        loads.append(load)
    return paints, loads


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Static files, no log lines, no caching (each load fetches the page, as the served
    pages are)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def static_server(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    """http.server over ``root`` (holding the one-line baseline page) on a free port."""
    (root / "baseline.html").write_text("<!doctype html><title>b</title><p>baseline</p>")
    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not 1 <= args.repeats <= 100:
        raise SystemExit("--repeats 1..100")
    env = {**os.environ, "PYTHONPATH": str(REPO), "STB_QUIET": "1"}
    with tempfile.TemporaryDirectory(prefix="stb-paint-") as tmp:
        data = args.data_dir or Path(tmp) / "data"
        if args.data_dir is None:
            subprocess.run(
                [sys.executable, "-m", "pipeline", "build", "--quiet", "--variant",
                 ",".join(PAGES), "--data-dir", str(data)],
                env=env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "serve", "--data-dir", str(data),
             "--port", str(port)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stdout is not None
        server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/"
        static, static_port = static_server(Path(tmp))
        driver = browser()
        try:
            base = f"http://127.0.0.1:{static_port}/baseline.html"
            rows = {"static page (baseline)": (*timings(driver, base, args.repeats), None)}
            for name, path in PAGES.items():
                found = timings(driver, f"http://127.0.0.1:{port}{path}", args.repeats)
                rows[name] = (*found, peak_mb(server.pid))
        finally:
            driver.quit()
            static.shutdown()
            server.terminate()
            server.wait(timeout=30)
    floor = statistics.median(rows["static page (baseline)"][0])
    table = Table(title=f"first paint in headless Chromium, median of {args.repeats} loads")
    for col in ("page", "first paint ms", "slowest ms", "load event ms", "ratio to baseline",
                "server RSS MB (peak)"):  # fmt: skip
        table.add_column(col, justify="left" if col == "page" else "right")
    for name, (paints, loads, memory) in rows.items():
        paint = statistics.median(paints)
        shown = "-" if memory is None else f"{memory[0]:.0f} ({memory[1]:.0f})"
        table.add_row(
            name, f"{paint:.0f}", f"{max(paints):.0f}", f"{statistics.median(loads):.0f}",
            f"{paint / floor:.2f}", shown,
        )  # fmt: skip
    console = Console(width=140)
    console.print(table)
    console.print("target: first paint <= 1000 ms (issue 25)")


if __name__ == "__main__":
    main()
