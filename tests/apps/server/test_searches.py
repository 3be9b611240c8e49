"""`serve`'s Knucklebones searches run in worker processes (issue 30, item 5): a search never
holds up a table lookup, the queue is bounded (503 with Retry-After when full), a worker that
dies is replaced, and the workers stop with the server. `serve --workers N` serves from N
processes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.apps.knucklebones.position import solve
from tests.conftest import REPO, invoke

pytest.importorskip("starlette", reason="serve needs the [serve] extra")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
import httpx
from starlette.testclient import TestClient

from pipeline.apps.server.searches import Busy, SearchPool
from pipeline.apps.server.web import create_app, host_name

SEARCH = "/knucklebones/position.json?board=44_/1__/___;___/3__/___&die=4&depth=2"
LOOKUP = "/classic/position.json?tiles=12345&roll=7"


def worker_ids(pool: SearchPool) -> list[int]:
    """The pool's worker process ids (none before the first search)."""
    procs = getattr(pool._executor, "_processes", None) or {}
    return sorted(int(p) for p in procs)


def hold(positions: Any, gate: str) -> int:
    """Run in a search worker: wait until the file ``gate`` exists (the test holds the worker
    busy for as long as it needs), then return the worker's process id."""
    assert positions is not None  # the worker's own Positions
    while not os.path.exists(gate):
        time.sleep(0.01)
    return os.getpid()


def fail(positions: Any) -> None:
    """Run in a search worker: an error that is not the user's."""
    raise KeyError("a bug")


def gone(pid: int, timeout: float = 20.0) -> bool:
    """Whether process ``pid`` has ended (within ``timeout``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def app(built: Path) -> Iterator[Any]:
    """The application with one search worker and room for two searches at once."""
    application = create_app(built, search_workers=1, search_queue=2)
    yield application
    application.state.searches.close()


def test_a_search_runs_in_a_worker_process(app: Any) -> None:
    """The answer is the search's (`knucklebones solve`), computed in another process; the
    variant's page, which would load the search too, is answered there as well."""
    with TestClient(app) as client:
        found = client.get(SEARCH).json()
        pids = worker_ids(app.state.searches)
        assert len(pids) == 1 and pids[0] != os.getpid()
        solved = solve("44_/1__/___", "___/3__/___", 4, depth=2)
        assert {c["column"]: c["win"] for c in found["columns"]} == {
            c.column: c.win for c in solved.columns
        }
        assert found["columns"][0]["column"] == solved.best.column
        info = client.get("/knucklebones.json").json()["variant"]
        assert info["board"] == {"columns": 3, "rows": 3, "faces": 6}
        bad = client.get(SEARCH.replace("depth=2", "depth=9"))  # a domain error travels back
        assert bad.status_code == 400 and "between 1 and 5" in bad.json()["error"]
        assert app.state.searches._inflight == 0
    # leaving the client runs the lifespan's end: the worker stops with the server
    assert worker_ids(app.state.searches) == [] and gone(pids[0])


def test_a_search_never_holds_up_a_lookup_and_the_queue_is_bounded(
    app: Any, tmp_path: Path
) -> None:
    """While the one worker is held busy and a search waits behind it, a table lookup is
    answered at once; one more search finds the queue full: 503 with Retry-After, JSON."""
    gate = tmp_path / "gate"
    searches = app.state.searches

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            held = asyncio.create_task(searches.run(hold, str(gate)))
            waiting = asyncio.create_task(client.get(SEARCH))
            while searches._inflight < 2:
                await asyncio.sleep(0.01)
            lookup = await asyncio.wait_for(client.get(LOOKUP), timeout=30)
            assert lookup.status_code == 200 and lookup.json()["moves"]
            full = await client.get(SEARCH)
            assert full.status_code == 503 and full.headers["retry-after"] == "1"
            assert full.headers["content-type"].startswith("application/json")
            assert "try again" in full.json()["error"] and full.json()["status"] == 503
            page = await client.get(SEARCH.replace(".json", ""))
            assert page.status_code == 503 and "try again" in page.text
            assert not held.done() and not waiting.done()  # the worker is still held
            gate.touch()
            worker = await asyncio.wait_for(held, timeout=60)
            answered = await asyncio.wait_for(waiting, timeout=60)
            assert answered.status_code == 200 and answered.json()["source"] == "search"
            assert worker != os.getpid() and searches._inflight == 0

    asyncio.run(scenario())


def test_a_worker_that_dies_is_replaced(app: Any) -> None:
    """A worker killed (out of memory, say) costs the request it held a 503; the next search
    starts a new worker."""
    with TestClient(app) as client:
        assert client.get(SEARCH).status_code == 200
        (first,) = worker_ids(app.state.searches)
        os.kill(first, signal.SIGKILL)
        assert gone(first)
        # positions not asked before: an answer already sent is sent again without a search
        broken = client.get(SEARCH.replace("die=4", "die=5"))
        assert broken.status_code == 503 and "stopped" in broken.json()["error"]
        again = client.get(SEARCH.replace("die=4", "die=6"))
        assert again.status_code == 200, again.text[:200]
        assert worker_ids(app.state.searches) != [first]


def test_an_internal_error_in_a_worker_is_one_line(built: Path) -> None:
    pool = SearchPool(built, workers=1, queue=1)
    try:
        with pytest.raises(RuntimeError, match=r"^internal error in a search worker$"):
            asyncio.run(pool.run(fail))
    finally:
        pool.close()


def test_the_pool_refuses_when_full_and_when_closed(built: Path, tmp_path: Path) -> None:
    pool = SearchPool(built, workers=1, queue=1)
    gate = tmp_path / "gate"

    async def scenario() -> None:
        held = asyncio.create_task(pool.run(hold, str(gate)))
        while pool._inflight < 1:
            await asyncio.sleep(0.01)
        with pytest.raises(Busy, match="the most this server takes at once") as busy:
            await pool.run(hold, str(gate))
        assert busy.value.retry_after == 1
        gate.touch()
        await asyncio.wait_for(held, timeout=60)

    try:
        asyncio.run(scenario())
    finally:
        pool.close()
    with pytest.raises(Busy, match="stopping"):
        asyncio.run(pool.run(hold, str(gate)))
    with pytest.raises(ValueError, match="at least one"):
        SearchPool(built, workers=2, queue=1)


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("127.0.0.1:8025", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("[::1]:8025", "[::1]"),
        ("[::1]", "[::1]"),
        ("::1", "::1"),
        ("evil.example:80", "evil.example"),
        ("localhost:", None),
        ("localhost:x", None),
        ("[::1]x", None),
        ("[::1", None),
        ("", None),
        (None, None),
    ],
)
def test_host_name(header: str | None, host: str | None) -> None:
    assert host_name(header) == host


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def test_command_serves_from_two_processes_and_stops_them_all(built: Path) -> None:
    """`serve --workers 2`: two server processes answer on one port (a search too, in a search
    process of its own); Ctrl-C stops every one of them, cleanly."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "-d", str(built), "--port", str(port),
         "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert "from 2 server processes" in proc.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                response = httpx.get(url + LOOKUP, timeout=10)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert response.status_code == 200
        servers = [p for p in children(proc.pid) if b"spawn_main" in cmdline(p)]
        assert len(servers) == 2
        with httpx.Client(base_url=url, timeout=60) as client:  # one connection: one server
            assert client.get(SEARCH).json()["source"] == "search"
            assert client.get("/.json", headers={"Host": "evil.example"}).status_code == 400
        descendants = [*servers, *(c for s in servers for c in children(s))]
        assert len(descendants) >= 3  # the search process of the server that searched
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped" in err
    assert all(gone(p) for p in descendants)


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_command_refuses_a_port_in_use_and_bad_options(built: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = invoke(["serve", "-d", built, "--port", port])
    assert result.code == 1 and result.stderr.count("\n") == 1
    assert f"cannot listen on http://127.0.0.1:{port}/" in result.stderr
    small = invoke(["serve", "-d", built, "--search-workers", "4", "--search-queue", "2"])
    assert small.code == 2 and "--search-queue 2 is smaller" in small.stderr
    zero = invoke(["serve", "-d", built, "--workers", "0"])
    assert zero.code == 2 and "--workers" in zero.stderr
