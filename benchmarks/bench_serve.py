"""`stb-pipeline serve` under load: one position lookup, 50 clients at once, 30 s, on 127.0.0.1.

Targets (issue 25), on a 24-tile box (`stb-pipeline build --tiles 24 --dice 3 --objective
score`: 3 dice cannot shut tile 24, so P(shut) is 0 and the box is built for its score) and on
knucklebones-3x2: median <= 20 ms, 99th percentile <= 100 ms, no failed request, the server's
memory < 500 MB; the page's first paint <= 1 s.

The server runs as its own process (`python -m pipeline serve`, its peak memory read from
/proc/PID/status); the clients are asyncio connections in this process, each sending one GET at a
time on a kept-alive connection (a few microseconds of CPU a request, so they take little of the
2 cores from the server). The positions asked are drawn once, seeded (``--seed``), and cycled.

The baseline, in the same run: one DuckDB point query of the same states file (``select value
... where state_id = $id``, in this process, one client): what a per-request DuckDB lookup costs
before any concurrency, and why the server reads big variants into value arrays instead (their
files keep the solver's order, so a point query reads a whole row group). The ratio is the served
median over it. First paint is measured in headless Chromium when it is installed.

Usage: python benchmarks/bench_serve.py --data-dir DIR [--seconds 30] [--clients 50]
       [--variants stb-24t-3d6-score,knucklebones-3x2] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of a process, MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def box_paths(name: str, tiles: int, dice: int, sides: int, n: int, rng: random.Random) -> list:
    """``n`` lookups of random positions of a box, each with a possible roll."""
    out = []
    for _ in range(n):
        state = rng.randrange(1, 1 << tiles)
        roll = rng.randrange(dice, dice * sides + 1)
        out.append(f"/{name}/position.json?id={state}&roll={roll}")
    return out


def board_paths(name: str, n: int, rng: random.Random) -> list[str]:
    """``n`` lookups of Knucklebones positions reached by random play, each with a die."""
    import numpy as np

    from pipeline.apps.knucklebones.position import knucklebones_game

    game = knucklebones_game(name)
    out = []
    for _ in range(n):
        pairs = np.zeros(game.r.columns, dtype=np.int64)
        for _ in range(rng.randrange(0, game.r.slots)):
            die = rng.randrange(1, game.r.faces + 1)
            legal = [c for c in range(game.r.columns) if game.t.place[pairs[c], die - 1] >= 0]
            after = pairs.copy()
            c = rng.choice(legal)
            after[c] = game.t.place[after[c], die - 1]
            nxt = game.t.swap[after]
            if game.terminal_mask(nxt[None, :])[0]:
                break
            pairs = nxt
        die = rng.randrange(1, game.r.faces + 1)
        board = quote(game.board_text(pairs), safe="")
        out.append(f"/{name}/position.json?board={board}&die={die}")
    return out


async def one_client(
    port: int, paths: list[str], start: int, stop_at: float, lat: list[float], bad: list[int]
) -> None:
    """Send GETs one after another on one kept-alive connection until ``stop_at``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    k = start
    try:
        while time.perf_counter() < stop_at:
            path = paths[k % len(paths)]
            k += 1
            t0 = time.perf_counter()
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            lat.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200"):
                bad.append(1)
    except (OSError, asyncio.IncompleteReadError):
        bad.append(1)
    finally:
        writer.close()


async def load(port: int, paths: list[str], clients: int, seconds: float) -> tuple[list, int]:
    lat: list[float] = []
    bad: list[int] = []
    stop_at = time.perf_counter() + seconds
    await asyncio.gather(
        *(one_client(port, paths, i * 97, stop_at, lat, bad) for i in range(clients))
    )
    return lat, len(bad)


def duckdb_baseline(data_dir: Path, name: str, ids: list[int]) -> float:
    """Median ms of one DuckDB point query of the variant's states file (in this process)."""
    import duckdb

    from pipeline.store.layout import variant_file

    path = str(variant_file(data_dir, "states", name))
    con = duckdb.connect(config={"enable_object_cache": True})
    times = []
    for state in ids:
        t0 = time.perf_counter()
        con.execute(
            "select value from read_parquet($p) where variant = $v and state_id = $s",
            {"p": path, "v": name, "s": state},
        ).fetchall()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def first_paint(url: str) -> float | None:
    """First contentful paint (ms) of ``url`` in headless Chromium; None without it."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,1000"):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        paints = []
        for _ in range(3):
            browser.get("about:blank")
            browser.get(url)
            time.sleep(0.3)
            paints.append(
                browser.execute_script(
                    "const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    "return p ? p.startTime : null;"
                )
            )
        return statistics.median(p for p in paints if p is not None)
    finally:
        browser.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--variants", default="stb-24t-3d6-score,knucklebones-3x2")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 1 <= args.clients <= 500 or not 0 < args.seconds <= 600:
        raise SystemExit("--clients 1..500 and --seconds up to 600")
    rng = random.Random(args.seed)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "STB_QUIET": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "--data-dir", str(args.data_dir),
         "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/"
    time.sleep(0.5)
    table = Table(title=f"serve: {args.clients} clients x {args.seconds:.0f} s on 127.0.0.1")
    for col in ("variant", "requests", "failed", "req/s", "median ms", "p99 ms",
                "server CPU ms/req", "DuckDB point query ms (baseline)", "ratio",
                "server RSS MB (peak)"):  # fmt: skip
        table.add_column(col, justify="left" if col == "variant" else "right")
    paint = None
    try:
        for name in args.variants.split(","):
            if name.startswith("knucklebones"):
                paths = board_paths(name, 2000, rng)
                base_ids = [rng.randrange(0, 1_000_000) for _ in range(20)]
            else:
                tiles = int(name.split("-")[1].rstrip("t"))
                dice = int(name.split("-")[2].split("d")[0])
                paths = box_paths(name, tiles, dice, 6, 2000, rng)
                base_ids = [rng.randrange(1, 1 << tiles) for _ in range(20)]
            asyncio.run(load(port, paths, 1, 3.0))  # warm: the first lookup reads arrays
            cpu0 = cpu_seconds(server.pid)
            lat, failed = asyncio.run(load(port, paths, args.clients, args.seconds))
            cpu_ms = (cpu_seconds(server.pid) - cpu0) * 1000 / max(1, len(lat))
            ms = sorted(x * 1000 for x in lat)
            median, p99 = statistics.median(ms), ms[int(0.99 * (len(ms) - 1))]
            base = duckdb_baseline(args.data_dir, name, base_ids)
            rss, hwm = peak_mb(server.pid)
            table.add_row(
                name, f"{len(ms):,}", str(failed), f"{len(ms) / args.seconds:,.0f}",
                f"{median:.1f}", f"{p99:.1f}", f"{cpu_ms:.2f}", f"{base:.1f}",
                f"{median / base:.2f}",
                f"{rss:.0f} ({hwm:.0f})",
            )  # fmt: skip
            if paint is None:
                paint = first_paint(f"http://127.0.0.1:{port}{paths[0].replace('.json', '')}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    console = Console(width=160)
    console.print(table)
    shown = "chromium not installed" if paint is None else f"{paint:.0f} ms"
    console.print(f"first contentful paint of a position page: {shown} (target <= 1000 ms)")
    console.print(f"seed {args.seed}; positions drawn at random and cycled")


if __name__ == "__main__":
    main()
