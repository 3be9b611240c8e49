"""`stb-pipeline serve` under load: one position lookup, 50 clients at once, 30 s, on 127.0.0.1.

Targets (issue 25), on a 24-tile box (`stb-pipeline build --tiles 24 --dice 3 --objective
score`: 3 dice cannot shut tile 24, so P(shut) is 0 and the box is built for its score) and on
knucklebones-3x2: median <= 20 ms, 99th percentile <= 100 ms, no failed request, the server's
memory < 500 MB; the page's first paint <= 1 s.

The server runs as its own process (`python -m pipeline serve`, its peak memory read from
/proc/PID/status); the clients are asyncio connections in this process, each sending one GET at a
time on a kept-alive connection. They cost CPU too (about 0.03 ms a request, half the server's:
``--compare`` prints it), taken from the cores the server has, so ``--compare`` also prints the
median's floor: clients over the most requests a second the cores allow both. The positions
asked are drawn once, seeded (``--seed``), and cycled.

The baseline, in the same run: one DuckDB point query of the same states file (``select value
... where state_id = $id``, in this process, one client): what a per-request DuckDB lookup costs
before any concurrency, and why the server reads big variants into value arrays instead (their
files keep the solver's order, so a point query reads a whole row group). The ratio is the served
median over it. First paint is measured in headless Chromium when it is installed.

Usage: python benchmarks/bench_serve.py --data-dir DIR [--seconds 30] [--clients 50]
       [--variants stb-24t-3d6-score,knucklebones-3x2] [--seed 0]

``--mix`` runs issue 30's load instead (:func:`run_mix`): 50 clients, 30 s, position lookups of
a mix of classic, two-player, four-player, two-player-stake, double-shutter, a 16-tile box and
knucklebones-2x2 (state and roll pairs drawn, seeded, from each variant's policy rows; boards
reached by random play), first alone, then with full-game Knucklebones searches (3x3, six-sided
die, no tables; ``--search-depth 2``) added: the same 50 lookup clients, and searches sent at a
fixed rate, 5 % (``--search-share``) of all requests at the lookups' rate of the window without
them just before (open loop: other people asking; searches sent by the lookups' own clients
would take those clients away from the lookups, and lighten the load they are compared under).
The two take turns in ``--rounds`` windows. Each with ``--workers 1`` and ``--workers 2``
(``--compare-workers``), and ``--baseline-repo`` runs another checkout's server beside them: the
lookups' median and p99 apart from the searches', failures (any answer but 200, a 503
included), the CPU of the server's whole process tree per request, and the memory of each of
its processes (server processes, search workers). Baselines in the same run: the lookups' p99
without searches (with them it must stay within 1.5x) and one server process (for two).

  stb-pipeline build --variant classic,two-player,four-player,two-player-stake,\
      double-shutter,knucklebones-2x2 --data-dir DIR
  stb-pipeline build --tiles 16 --dice 3 --data-dir DIR
  python benchmarks/bench_serve.py --data-dir DIR --mix [--seconds 30] [--clients 50]

``--in-process`` (:func:`run_in_process`) measures where a request's CPU goes without the
network: the same lookups, in one process, the answer alone and the whole application, beside
``--baseline-repo``'s (``--rounds`` passes over 300 lookups a variant).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baseline  # benchmarks/baseline.py: the version run beside

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

    from pipeline.apps.knucklebones.position import board_variant

    make = board_variant(name).board
    assert make is not None  # a Knucklebones variant: a game of boards
    game = make().game
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
            took, ok = await get(reader, writer, path)
            lat.append(took)
            if not ok:
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
    parser.add_argument("--data-dir", type=Path, help="(--compare: built here when not given)")
    parser.add_argument("--variants", default="stb-24t-3d6-score,knucklebones-3x2")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    add_mix_options(parser)
    args = parser.parse_args()
    if not 1 <= args.clients <= 500 or not 0 < args.seconds <= 600:
        raise SystemExit("--clients 1..500 and --seconds up to 600")
    if args.compare:
        run_compare(args)
        return
    if args.data_dir is None:
        raise SystemExit("error: --data-dir DIR (or --compare, which builds the mix)")
    if args.in_process:
        run_in_process(args)
        return
    if args.mix:
        run_mix(args)
        return
    rng = random.Random(args.seed)
    port = free_port()
    env = baseline.env(None, STB_QUIET="1")
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


# -- issue 30: the mix of every family, with and without searches, one and two processes -------

#: The issue's mix: one variant of each family, a 16-tile box and the smallest Knucklebones board.
MIX = (
    "classic,two-player,four-player,two-player-stake,double-shutter,stb-16t-3d6-shut,"
    "knucklebones-2x2"
)
BUILD_MIX = (
    "stb-pipeline build --variant classic,two-player,four-player,two-player-stake,double-shutter,"
    "knucklebones-2x2 -d DIR && stb-pipeline build --tiles 16 --dice 3 -d DIR"
)
#: The issue's target: the lookups' p99 with searches mixed in, over their p99 without.
P99_RATIO_TARGET = 1.5


def add_mix_options(parser: argparse.ArgumentParser) -> None:
    """The options of :func:`run_mix` (kept apart from the big-variant run's)."""
    parser.add_argument("--mix", action="store_true", help="run issue 30's mixed load")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="the mix's CPU a request in one process, no network: the answer "
        "(Positions.position) and the whole application (ASGI), by variant",
    )
    parser.add_argument("--mix-variants", default=MIX)
    parser.add_argument("--search-share", type=float, default=0.05)
    parser.add_argument("--search-depth", type=int, default=2)
    parser.add_argument("--compare-workers", default="1,2")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="windows per condition, taking turns (--seconds in all per condition)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="the regression run (`just bench-serve`): the mix without searches, one and two "
        "server processes, this checkout and --base interleaved, medians and ratios",
    )
    parser.add_argument(
        "--per-variant",
        type=int,
        default=3000,
        help="--compare: the positions asked of each variant, cycled (default 3000: 21,000 in "
        "all, 19,198 distinct, about what the server's default keeps; 300: a few people's "
        "games; 'this, nothing kept' is the cost of a position never asked before)",
    )
    parser.add_argument(
        "--base-data-dir",
        type=Path,
        help="the data directory --base serves (default: built by --base itself)",
    )
    baseline.add_options(parser)


def policy_paths(data_dir: Path, name: str, n: int, seed: int) -> list[str]:
    """``n`` lookups of a tile game: (state, roll) pairs drawn from the variant's policy rows
    (a reservoir sample, repeatable with ``seed``), so every one names a real position."""
    import duckdb

    from pipeline.store.layout import table_files

    files = [str(f) for f in table_files(data_dir, "policy")]
    con = duckdb.connect()
    # DuckDB samples a FROM clause before its WHERE: the variant's rows are chosen first, in a
    # subquery, so that every variant gets its n rows (a sample of every file's rows, then
    # filtered, gave a small variant's few rows a tiny share of the mix: 3 of 5,789 for classic)
    rows = con.execute(
        "select state_id, roll from (select state_id, roll from read_parquet($files, "
        "union_by_name = true) where variant = $v) "
        f"using sample reservoir({int(n)} rows) repeatable ({int(seed)})",
        {"files": files, "v": name},
    ).fetchall()
    con.close()
    if not rows:
        raise SystemExit(f"error: {name} has no policy rows in {data_dir}; build it: {BUILD_MIX}")
    return [f"/{name}/position.json?id={state}&roll={roll}" for state, roll in rows]


def mix_paths(data_dir: Path, names: list[str], n: int, rng: random.Random) -> list[str]:
    """``n`` lookups of each variant of the mix, shuffled together (seeded)."""
    import duckdb

    from pipeline.store.layout import table_files

    files = [str(f) for f in table_files(data_dir, "states")]
    built = {
        r[0]
        for r in duckdb.execute(
            "select distinct variant from read_parquet($f, union_by_name = true)", {"f": files}
        ).fetchall()
    } if files else set()  # fmt: skip
    missing = sorted(set(names) - built)
    if missing:
        raise SystemExit(f"error: {', '.join(missing)} not built in {data_dir}: {BUILD_MIX}")
    out: list[str] = []
    for name in names:
        if name.startswith("knucklebones"):
            out += board_paths(name, n, rng)
        else:
            out += policy_paths(data_dir, name, n, rng.randrange(1 << 30))
    rng.shuffle(out)
    return out


async def get(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str
) -> tuple[float, bool]:
    """One GET on a kept-alive connection, its body read: (seconds, whether it was a 200)."""
    t0 = time.perf_counter()
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return time.perf_counter() - t0, head.startswith(b"HTTP/1.1 200")


async def fetch(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> float:
    """One GET on a kept-alive connection: its seconds, or NaN when the answer is not a 200."""
    took, ok = await get(reader, writer, path)
    return took if ok else math.nan


async def lookup_client(
    port: int,
    paths: list[str],
    start: int,
    stop_at: float,
    out: list[float],
    families: dict[str, list[float]] | None = None,
) -> None:
    """One kept-alive connection sending lookups one after another until ``stop_at`` (closed
    loop, as a person clicking through positions): seconds each, NaN for a failure; also by
    variant (the path's first part) in ``families``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    k = start
    try:
        while time.perf_counter() < stop_at:
            path = paths[k % len(paths)]
            took = await fetch(reader, writer, path)
            out.append(took)
            if families is not None:
                families.setdefault(path.split("/", 2)[1], []).append(took)
            k += 1
    except (OSError, asyncio.IncompleteReadError):
        out.append(math.nan)
    finally:
        writer.close()


async def search_feeder(
    port: int, paths: list[str], rate: float, stop_at: float, out: list[float]
) -> None:
    """Searches sent at ``rate`` a second until ``stop_at``, whatever the answers' speed (open
    loop: other people asking, added to the lookups' clients), each on a free kept-alive
    connection or a new one: seconds each, NaN for a failure (a 503 included)."""
    free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    opened: list[asyncio.StreamWriter] = []

    async def one(path: str) -> None:
        if free:
            conn = free.pop()
        else:
            conn = await asyncio.open_connection("127.0.0.1", port)
            opened.append(conn[1])
        try:
            out.append(await fetch(*conn, path))
            free.append(conn)
        except (OSError, asyncio.IncompleteReadError):
            out.append(math.nan)

    tasks, k, next_at = [], 0, time.perf_counter()
    while next_at < stop_at:
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        tasks.append(asyncio.create_task(one(paths[k % len(paths)])))
        k += 1
        next_at += 1.0 / rate
    await asyncio.gather(*tasks)
    for writer in opened:
        writer.close()


async def mixed_load(
    port: int, lookups: list[str], clients: int, seconds: float,
    searches: list[str] | None = None, rate: float = 0.0,
    families: dict[str, list[float]] | None = None,
) -> tuple[list[float], list[float]]:  # fmt: skip
    """``clients`` lookup clients for ``seconds``, plus searches at ``rate`` a second:
    (lookup seconds, search seconds), NaN for each failure; the lookups' also by variant in
    ``families``."""
    looked: list[float] = []
    searched: list[float] = []
    stop_at = time.perf_counter() + seconds
    step = max(1, len(lookups) // clients)
    jobs = [
        lookup_client(port, lookups, i * step, stop_at, looked, families) for i in range(clients)
    ]
    if searches and rate > 0:
        jobs.append(search_feeder(port, searches, rate, stop_at, searched))
    await asyncio.gather(*jobs)
    return looked, searched


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [pid], [pid]
    while todo:
        here = todo.pop()
        kids = [c for c, p in parent.items() if p == here]
        found += kids
        todo += kids
    return found


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and of every process below it now (those alive)."""
    total = 0.0
    for p in tree(pid):
        with contextlib.suppress(OSError, IndexError):
            total += cpu_seconds(p)
    return total


def nice(pid: int) -> int:
    """A process's scheduling niceness (the search workers run at 10)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def role(pid: int, root: int, workers: int) -> str:
    """What a process of the server's tree is: the supervisor of ``--workers N`` (N > 1), a
    server process, a search worker (niced), or multiprocessing's resource tracker."""
    if b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes():
        return "tracker"
    if nice(pid) > 0:
        return "search"
    return "supervisor" if pid == root and workers > 1 else "server"


def pss_mb(pid: int) -> float:
    """Proportional set size (MB): resident memory with shared pages split among sharers."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def memory(root: int, workers: int) -> dict[str, list[tuple[float, float, float]]]:
    """(RSS, peak RSS, PSS) in MB of each process of the server's tree, by role."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    for pid in tree(root):
        with contextlib.suppress(OSError, KeyError, ValueError):
            rss, hwm = peak_mb(pid)
            out.setdefault(role(pid, root, workers), []).append((rss, hwm, pss_mb(pid)))
    return out


def start_server(
    data_dir: Path, port: int, workers: int, repo: Path | None = None, extra: tuple = ()
) -> subprocess.Popen:
    """`stb-pipeline serve --workers N` as its own process, once it answers; with ``repo``,
    that checkout's server; ``extra``: more of serve's options."""
    env = baseline.env(repo, STB_QUIET="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "--data-dir", str(data_dir.resolve()),
         "--port", str(port), "--workers", str(workers), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=repo or REPO,  # `python -m` puts the working directory first on the path
    )  # fmt: skip
    assert server.stdout is not None
    server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/"
    for _ in range(600):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return server
        time.sleep(0.05)
    server.kill()
    raise SystemExit("error: the server did not answer within 30 s")


def percentile(ms: list[float], q: float) -> float:
    return ms[int(q * (len(ms) - 1))] if ms else float("nan")


def run_mix(args: argparse.Namespace) -> None:
    """Issue 30's load: lookups of the mix, then with searches added, for each ``--workers``
    count (see the module docstring)."""
    rng = random.Random(args.seed)
    names = args.mix_variants.split(",")
    lookups = mix_paths(args.data_dir, names, 3000, rng)
    searches = [f"{p}&depth={args.search_depth}" for p in board_paths("knucklebones", 3000, rng)]
    with_searches = f"{100 * args.search_share:g} % added"
    runs: list[tuple[str, int, Path | None]] = [
        (str(w), w, None) for w in (int(x) for x in args.compare_workers.split(","))
    ]
    base = baseline.checkout(args)
    if base is not None:
        runs.insert(0, (f"1 ({baseline.label(base)})", 1, base))
    table = Table(title=f"serve, issue 30's mix: {args.clients} lookup clients x "
                  f"{args.seconds:.0f} s ({args.rounds} turns), full-game searches at depth "
                  f"{args.search_depth}")  # fmt: skip
    for col in ("server processes", "searches", "requests", "failed (lookups / searches)",
                "req/s", "lookups median ms", "lookups p99 ms", "p99 / without searches",
                "searches sent", "searches median ms", "searches p99 ms",
                "server CPU ms/req", "load generator CPU ms/req"):  # fmt: skip
        table.add_column(col, justify="right")
    mem = Table(title="memory of the server's processes after its runs (MB: RSS, peak, PSS)")
    for col in ("server processes", "role", "processes", "RSS each", "peak RSS each",
                "PSS each", "PSS in all"):  # fmt: skip
        mem.add_column(col, justify="right")
    fam = Table(title="the lookups by variant (ms)")
    for col in ("server processes", "searches", "variant", "lookups", "failed", "median",
                "p99"):  # fmt: skip
        fam.add_column(col, justify="right")
    worst: dict[tuple[str, str], tuple[float, str, float]] = {}
    summary: list[str] = []
    for shown, w, repo in runs:
        port = free_port()
        server = start_server(args.data_dir, port, w, repo)
        try:
            warm = mixed_load(port, lookups[:400], max(4, 2 * w), 5.0, searches, 5.0)
            asyncio.run(warm)  # arrays read, search workers started
            # the conditions take turns, --rounds windows each, so that a machine whose load
            # drifts (other jobs) weighs on both alike; the searches of a window come at the
            # share of the lookups' rate in the window without them just before
            window = args.seconds / args.rounds
            pooled = {k: ([], []) for k in ("none", with_searches)}
            by_family: dict[str, dict[str, list[float]]] = {k: {} for k in pooled}
            cpu = dict.fromkeys(pooled, 0.0)
            own = dict.fromkeys(pooled, 0.0)  # the load generator's (this process's) CPU
            for _ in range(args.rounds):
                rate = 0.0
                for label in pooled:
                    cpu0, own0 = tree_cpu(server.pid), time.process_time()
                    looked, searched = asyncio.run(
                        mixed_load(
                            port, lookups, args.clients, window, searches, rate, by_family[label]
                        )
                    )
                    cpu[label] += tree_cpu(server.pid) - cpu0
                    own[label] += time.process_time() - own0
                    pooled[label][0].extend(looked)
                    pooled[label][1].extend(searched)
                    rate = args.search_share / (1 - args.search_share) * len(looked) / window
            base_p99 = None
            for label, (looked, searched) in pooled.items():
                look = sorted(1000 * x for x in looked if not math.isnan(x))
                srch = sorted(1000 * x for x in searched if not math.isnan(x))
                failed = [sum(math.isnan(x) for x in xs) for xs in (looked, searched)]
                total = len(looked) + len(searched)
                p99 = percentile(look, 0.99)
                base_p99 = p99 if base_p99 is None else base_p99
                ratio = p99 / base_p99
                table.add_row(
                    shown, label, f"{total:,}", f"{failed[0]} / {failed[1]}",
                    f"{total / args.seconds:,.0f}", f"{statistics.median(look):.1f}",
                    f"{p99:.1f}", f"{ratio:.2f}", f"{len(searched):,}",
                    f"{statistics.median(srch):.1f}" if srch else "-",
                    f"{percentile(srch, 0.99):.1f}" if srch else "-",
                    f"{1000 * cpu[label] / max(1, total):.2f}",
                    f"{1000 * own[label] / max(1, total):.3f}",
                )  # fmt: skip
                if label != "none":
                    verdict = "met" if ratio <= P99_RATIO_TARGET else "MISSED"
                    summary.append(
                        f"server processes {shown}: lookups' p99 with searches {p99:.1f} ms = "
                        f"{ratio:.2f}x the {base_p99:.1f} ms without "
                        f"(target <= {P99_RATIO_TARGET}x: {verdict})"
                    )
            for label, found in by_family.items():
                for name in names:
                    took = found.get(name, [])
                    ok = sorted(1000 * x for x in took if not math.isnan(x))
                    fam.add_row(
                        shown, label, name, f"{len(took):,}", str(len(took) - len(ok)),
                        f"{statistics.median(ok):.1f}" if ok else "-",
                        f"{percentile(ok, 0.99):.1f}" if ok else "-",
                    )  # fmt: skip
                    if ok:
                        worst[(shown, label)] = max(
                            worst.get((shown, label), (0.0, "", 0.0)),
                            (percentile(ok, 0.99), name, statistics.median(ok)),
                        )
            for kind, rows in sorted(memory(server.pid, w).items()):
                if kind == "tracker":
                    continue
                rss, hwm, pss = (statistics.mean(r[i] for r in rows) for i in range(3))
                mem.add_row(
                    shown, kind, str(len(rows)), f"{rss:.0f}", f"{hwm:.0f}", f"{pss:.0f}",
                    f"{sum(r[2] for r in rows):.0f}",
                )  # fmt: skip
        finally:
            server.terminate()
            server.wait(timeout=60)
    console = Console(width=200)
    console.print(table)
    console.print(fam)
    console.print(mem)
    for line in summary:
        console.print(line)
    for (shown, label), (p99, name, median) in worst.items():
        console.print(
            f"server processes {shown}, searches {label}: the worst variant's p99 is {name}'s "
            f"{p99:.1f} ms (its median {median:.1f} ms)"
        )
    console.print(
        f"seed {args.seed}; variants {args.mix_variants}; lookups drawn from each variant's "
        f"policy rows (Knucklebones boards by random play) and shuffled; {os.cpu_count()} CPUs"
    )


# -- the regression run: this checkout beside --base, interleaved (issue 49) -----------------

#: Issue 49's targets for one server process under the mix (and --workers 2's median).
#: The configuration answering every request anew (``--answer-cache-mb 0``).
NOTHING_KEPT = "this, nothing kept"
TARGETS = {"cpu_ms": 0.20, "p50": 10.0, "p99": 50.0, "rss": 200.0, "p50_two": 6.0}


def build_mix(repo: Path, data: Path) -> Path:
    """The mix's variants built into ``data`` by ``repo``'s own code (each version serves
    tables it wrote); kept when already there."""
    if (data / "manifest.json").exists():
        return data
    env = baseline.env(repo, STB_QUIET="1")
    for extra in (["--variant", MIX.replace(",stb-16t-3d6-shut", "")],
                  ["--tiles", "16", "--dice", "3"]):  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "pipeline", "build", *extra, "-d", str(data), "--quiet"],
            env=env, cwd=repo, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return data


def window(port: int, pid: int, lookups: list[str], clients: int, seconds: float) -> dict:
    """One window of the load on one server: its requests a second, median and p99 (ms),
    failures and the server tree's CPU ms a request."""
    cpu0, own0 = tree_cpu(pid), time.process_time()
    looked, _ = asyncio.run(mixed_load(port, lookups, clients, seconds))
    cpu, own = tree_cpu(pid) - cpu0, time.process_time() - own0
    ok = sorted(1000 * x for x in looked if not math.isnan(x))
    return {
        "rps": len(looked) / seconds, "p50": statistics.median(ok) if ok else math.nan,
        "p99": percentile(ok, 0.99), "failed": len(looked) - len(ok),
        "cpu_ms": 1000 * cpu / max(1, len(looked)), "gen_ms": 1000 * own / max(1, len(looked)),
    }  # fmt: skip


def run_compare(args: argparse.Namespace) -> None:
    """`just bench-serve`: issue 30's mix without searches, one and two server processes,
    this checkout and ``--base`` (each serving tables it built), windows taking turns
    (``--rounds``, ``--seconds`` in all per configuration); medians over the windows, the
    ratio this / base, memory after."""
    base = baseline.checkout(args)
    tmp = Path(tempfile.mkdtemp(prefix="stb-bench-serve-"))
    try:
        data = build_mix(REPO, (args.data_dir or tmp / "this").resolve())
        # the same lookups come round again in every window: "nothing kept" is this checkout
        # answering each of them anew (what a position nobody asked before costs)
        fresh = (NOTHING_KEPT, REPO, data, 1, ("--answer-cache-mb", "0"))
        configs = [("this", REPO, data, w, ()) for w in (1, 2)] + [fresh]
        if base is not None:
            base_data = build_mix(base, (args.base_data_dir or tmp / "base").resolve())
            shown = baseline.label(base)
            configs = [
                c for w in (1, 2)
                for c in ((shown, base, base_data, w, ()), ("this", REPO, data, w, ()))
            ] + [fresh]  # fmt: skip
        lookups = mix_paths(data, MIX.split(","), args.per_variant, random.Random(args.seed))
        results = _interleave(configs, lookups, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _print_compare(configs, results, args)


def _interleave(configs: list, lookups: list[str], args: argparse.Namespace) -> list[dict]:
    """Every configuration's server started, warmed, then loaded in turns: a list of windows
    and the memory after, per configuration."""
    servers = []
    try:
        for _, repo, data, w, extra in configs:
            port = free_port()
            servers.append((port, start_server(data, port, w, repo, extra)))
            asyncio.run(mixed_load(port, lookups[:600], 4, 3.0))  # arrays read, code warm
        out: list[dict] = [{"windows": []} for _ in configs]
        span = args.seconds / args.rounds
        for r in range(args.rounds):
            order = range(len(configs)) if r % 2 == 0 else reversed(range(len(configs)))
            for k in order:
                port, server = servers[k]
                out[k]["windows"].append(window(port, server.pid, lookups, args.clients, span))
        for k, (_, server) in enumerate(servers):
            mem = memory(server.pid, configs[k][3])
            out[k]["rss"] = max((r[0] for r in mem.get("server", [])), default=math.nan)
            out[k]["pss"] = sum(r[2] for kind, rows in mem.items() for r in rows)
        return out
    finally:
        for _, server in servers:
            server.terminate()
            server.wait(timeout=60)


def p50_floor(m: dict[str, float], clients: int) -> float:
    """The lowest median (ms) the machine allows ``clients`` closed-loop clients when the
    server and the load generator share its cores: each client waits for its answer, so the
    median is about clients / requests a second, and requests a second are at most the cores
    over the CPU a request costs both (server and generator)."""
    most = (os.cpu_count() or 1) / ((m["cpu_ms"] + m["gen_ms"]) / 1000)
    return 1000 * clients / most


def _print_compare(configs: list, results: list[dict], args: argparse.Namespace) -> None:
    span = args.seconds / args.rounds
    table = Table(
        title=f"serve under the mix: {args.clients} clients, {args.rounds} windows of "
        f"{span:.0f} s per configuration, taking turns (medians)"
    )
    for col in ("checkout", "server processes", "req/s", "p50 ms", "p99 ms", "failed",
                "server CPU ms/req", "load generator CPU ms/req", "p50 floor ms",
                "RSS MB (largest server)", "PSS MB (all)"):  # fmt: skip
        table.add_column(col, justify="right")
    med: dict[tuple[str, int], dict[str, float]] = {}
    for (shown, _, _, w, _), found in zip(configs, results, strict=True):
        m = {key: statistics.median(x[key] for x in found["windows"])
             for key in ("rps", "p50", "p99", "cpu_ms", "gen_ms")}  # fmt: skip
        m["failed"] = sum(x["failed"] for x in found["windows"])
        m["rss"], m["pss"] = found["rss"], found["pss"]
        med[(shown, w)] = m
        table.add_row(shown, str(w), f"{m['rps']:,.0f}", f"{m['p50']:.1f}", f"{m['p99']:.1f}",
                      str(int(m["failed"])), f"{m['cpu_ms']:.3f}", f"{m['gen_ms']:.3f}",
                      f"{p50_floor(m, args.clients):.1f}", f"{m['rss']:.0f}",
                      f"{m['pss']:.0f}")  # fmt: skip
    console = Console(width=160)
    console.print(table)
    base = next((c[0] for c in configs if c[0] not in ("this", NOTHING_KEPT)), None)
    pairs = [(w, base) for w in (1, 2)] if base is not None else []
    if (NOTHING_KEPT, 1) in med:
        pairs.append((1, NOTHING_KEPT))
    if pairs:
        for w, base in pairs:
            new, old = med[("this", w)], med[(base, w)]
            ratios = ", ".join(
                f"{what} {new[key] / old[key]:.2f}"
                for what, key in (("req/s", "rps"), ("p50", "p50"), ("p99", "p99"),
                                  ("CPU a request", "cpu_ms"), ("RSS", "rss"))
            )  # fmt: skip
            console.print(f"{w} server process{'es' if w > 1 else ''}, this / {base}: {ratios}")
    one, two = med[("this", 1)], med[("this", 2)]
    checks = [("CPU ms a request", one["cpu_ms"], TARGETS["cpu_ms"]),
              ("p50 ms", one["p50"], TARGETS["p50"]), ("p99 ms", one["p99"], TARGETS["p99"]),
              ("RSS MB", one["rss"], TARGETS["rss"]),
              ("--workers 2 p50 ms", two["p50"], TARGETS["p50_two"])]  # fmt: skip
    for what, got, want in checks:
        console.print(
            f"target {what} <= {want:g}: {got:.3f} ({'met' if got <= want else 'MISSED'})"
        )
    console.print(f"seed {args.seed}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
                  "at the end (the machine is shared: read the ratios)")  # fmt: skip


# -- where a request's CPU goes, without the network: the answer and the whole application ------

IN_PROCESS = r"""
import asyncio, json, sys, time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit
from pipeline.apps.server.web import create_app

data, paths, rounds = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
try:  # every answer anew; and one keeping its answers (a version before it kept none)
    app = create_app(data, allowed_hosts=["127.0.0.1"], answer_cache_mb=0)
    keeping = create_app(data, allowed_hosts=["127.0.0.1"])
    keeping.state.positions.answers.directory.watch()
except TypeError:
    app, keeping = create_app(data, allowed_hosts=["127.0.0.1"]), None
positions = app.state.positions
watched = getattr(positions.answers, "directory", None)
if hasattr(watched, "watch"):  # as `serve` runs: freshness off the request path
    watched.watch()


async def call(path, app=app):
    u = urlsplit(path)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": u.path, "raw_path": u.path.encode(),
             "query_string": u.query.encode(), "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8000)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 200, (path, sent)


async def main():
    out = {}
    for name, group in paths.items():
        asked = [(urlsplit(p).path.split("/")[1], dict(parse_qsl(urlsplit(p).query,
                  keep_blank_values=True))) for p in group]
        for p in group:
            await call(p)  # warm: the arrays read
        t0 = time.process_time()
        for _ in range(rounds):
            for n, q in asked:
                positions.position(n, q)
        t1 = time.process_time()
        for _ in range(rounds):
            for p in group:
                await call(p)
        t2 = time.process_time()
        again = float("nan")
        if keeping is not None:
            for p in group:
                await call(p, keeping)  # answered once, kept
            t3 = time.process_time()
            for _ in range(rounds):
                for p in group:
                    await call(p, keeping)
            again = 1000 * (time.process_time() - t3) / (rounds * len(group))
        k = rounds * len(group)
        out[name] = (1000 * (t1 - t0) / k, 1000 * (t2 - t1) / k, again)
    print(json.dumps(out))

asyncio.run(main())
"""


def run_in_process(args: argparse.Namespace) -> None:
    """The mix's lookups in one process, no network, for this checkout and ``--baseline-repo``
    (each in a fresh interpreter, the same positions): CPU ms a request of the answer alone
    (``Positions.position``: parameters checked, the library's answer, its JSON-able dict and
    link), of the whole application answering it (routing, the answer, JSON, the response) and
    of the application sending a kept answer again (:mod:`pipeline.apps.server.sent`), by
    variant; what the server's CPU a request under load is beyond: uvicorn, the sockets."""
    import json

    rng = random.Random(args.seed)
    names = args.mix_variants.split(",")
    paths = {n: [p for p in mix_paths(args.data_dir, [n], 300, rng)] for n in names}
    repos = [("new", REPO)]
    base = baseline.checkout(args)
    if base is not None:
        repos.insert(0, (baseline.label(base), base))
    found = {}
    for shown, repo in repos:
        env = baseline.env(repo, STB_QUIET="1")
        done = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, str(args.data_dir.resolve()), json.dumps(paths),
             str(args.rounds)],
            env=env, cwd=repo, capture_output=True, text=True, check=True,
        )  # fmt: skip
        found[shown] = json.loads(done.stdout.splitlines()[-1])
    table = Table(title=f"CPU ms a request in one process, no network ({args.rounds} x 300 each)")
    table.add_column("variant")
    for shown, _ in repos:
        table.add_column(f"answer ({shown})", justify="right")
        table.add_column(f"application ({shown})", justify="right")
        table.add_column(f"asked again ({shown})", justify="right")
    if len(repos) == 2:
        table.add_column("application new / old", justify="right")
    for name in [*names, "mean"]:
        row = [name]
        for shown, _ in repos:
            got = found[shown]
            three = got[name] if name != "mean" else [
                statistics.mean(got[n][i] for n in names) for i in (0, 1, 2)
            ]  # fmt: skip
            row += [f"{x:.3f}" if not math.isnan(x) else "-" for x in three]
        if len(repos) == 2:
            row.append(f"{float(row[5]) / float(row[2]):.2f}")
        table.add_row(*row)
    Console(width=160).print(table)
    console = Console(width=160)
    console.print(f"seed {args.seed}; 300 lookups a variant drawn as --mix draws them")


if __name__ == "__main__":
    main()
