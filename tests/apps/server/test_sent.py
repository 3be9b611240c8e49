"""The answers `serve` keeps (pipeline/apps/server/sent.py): a position asked again is the same
bytes without being answered again, errors are answered each time, the kept answers stay within
their memory (one drawn at random makes room), and a rebuild of the tables drops them all."""

from __future__ import annotations

import random
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from pipeline.apps.server.sent import LEVEL, SentAnswers, cost
from tests.conftest import REPO, invoke
from tests.support.wait import wait_until

pytest.importorskip("starlette", reason="serve needs the [serve] extra")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient

from pipeline.apps.server.web import create_app

URL = "/classic/position.json?tiles=12345&roll=7"


def noise(n: int, seed: int = 0) -> bytes:
    """Bytes that do not compress (a kept answer's size is its compressed size)."""
    return random.Random(seed).randbytes(n)


def kept_cost(key: tuple[str, bytes], body: bytes) -> int:
    return cost(key, zlib.compress(body, LEVEL))


def test_kept_answers_stay_within_their_memory() -> None:
    body = noise(100)
    size = kept_cost(("/a", b"q=1"), body)
    kept = SentAnswers(max_bytes=3 * size)
    look = object()
    assert kept.get(("/a", b"q=1"), look) is None  # the first look: nothing kept
    asked = [("/a", f"q={i}".encode()) for i in range(1, 10)]
    for key in asked:
        kept.put(key, look, body)
        assert kept._bytes <= 3 * size
    held = [key for key in asked if kept.get(key, look) is not None]
    assert len(kept._kept) == len(held) == 3 and kept._bytes == 3 * size
    assert asked[-1] in held  # the newest is always kept
    assert kept.get(asked[-1], look) == body  # as it was sent, not as it is kept
    kept.put(("/a", b"big"), look, noise(4 * size))  # larger than the whole: not kept
    assert kept.get(("/a", b"big"), look) is None and len(kept._kept) == 3
    again = SentAnswers(max_bytes=3 * size)
    again.get(asked[0], look)
    for key in asked:
        again.put(key, look, body)
    assert [k for k in asked if again.get(k, look)] == held  # seeded: the same answers kept


def test_a_round_larger_than_the_memory_still_finds_answers_kept() -> None:
    """People asking more positions in turn than fit: dropping the oldest first would keep
    none of a round when it comes back in the same order; a random drop keeps a share."""
    kept, look = SentAnswers(max_bytes=500 * kept_cost(("/a", b"q=000"), b"x")), object()
    kept.get(("/a", b""), look)
    asked = [("/a", f"q={i:03}".encode()) for i in range(1000)]
    for _ in range(3):
        hits = 0
        for key in asked:
            if kept.get(key, look) is None:
                kept.put(key, look, b"x")
            else:
                hits += 1
    assert 100 < hits < 500  # a fifth of the round (none, dropping the oldest first)


def test_a_new_look_drops_every_kept_answer_and_an_old_one_is_not_kept() -> None:
    kept = SentAnswers(max_bytes=1 << 20)
    old, new = object(), object()
    kept.get(("/a", b""), old)
    kept.put(("/a", b""), old, b"old")
    assert kept.get(("/a", b""), old) == b"old"
    assert kept.get(("/a", b""), new) is None and len(kept._kept) == 0  # the tables changed
    kept.put(("/a", b""), old, b"old")  # answered before the change: not kept
    assert len(kept._kept) == 0
    assert SentAnswers(0).get(("/a", b""), old) is None
    nothing = SentAnswers(0)
    nothing.get(("/a", b""), old)
    nothing.put(("/a", b""), old, b"x")
    assert len(nothing._kept) == 0  # --answer-cache-mb 0 keeps none


@pytest.fixture
def classic(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    result = invoke(["build", "--variant", "classic", "-q", "--data-dir", data])
    assert result.code == 0, result.stderr
    return data


def counted(app: Any) -> list[str]:
    """The queries the application answered anew (not sent from what it kept)."""
    handlers, asked = app.state.handlers, []
    answer = handlers.position_bytes

    async def position_bytes(path: str, query: str, name: str) -> Any:
        asked.append(query)
        return await answer(path, query, name)

    handlers.position_bytes = position_bytes
    return asked


def test_a_position_asked_again_is_sent_again_until_a_rebuild(classic: Path) -> None:
    app = create_app(classic)
    asked = counted(app)
    with TestClient(app) as client:  # the lifespan: the data directory watched, as served
        first = client.get(URL)
        again = client.get(URL)
        assert first.status_code == again.status_code == 200
        assert again.content == first.content and again.headers == first.headers
        assert asked == ["tiles=12345&roll=7"]  # answered once
        bad = "/classic/position.json?tiles=12345&roll=x"
        assert client.get(bad).status_code == client.get(bad).status_code == 400
        assert asked.count("tiles=12345&roll=x") == 2  # an error is answered each time
        directory = app.state.positions.answers.directory
        look = directory.look()
        result = invoke(["build", "--variant", "classic", "--force", "-q", "-d", classic])
        assert result.code == 0, result.stderr
        wait_until(lambda: directory.look() is not look, timeout=10)  # seen within a second
        after = client.get(URL)
        assert after.content == first.content  # the same rules: the same answer, read anew
        assert asked.count("tiles=12345&roll=7") == 2
    app.state.searches.close()


def test_nothing_is_kept_when_told(classic: Path) -> None:
    app = create_app(classic, answer_cache_mb=0)
    asked = counted(app)
    with TestClient(app) as client:
        assert client.get(URL).content == client.get(URL).content
    assert asked == ["tiles=12345&roll=7"] * 2
    app.state.searches.close()


LOADS = r"""
import sys
from pathlib import Path
from urllib.parse import parse_qsl
from pipeline.apps.server.positions import Positions

positions = Positions(Path(sys.argv[1]))
for name, query in [
    ("two-player", "tiles=123&player=2&p1_score=5&roll=3"),
    ("four-player", "tiles=123456789&player=2&best_score=10&best_count=1&roll=5"),
    ("two-player-stake", "tiles=123456789&player=1&roll=7"),
    ("stb-16t-2d6-score", "tiles=1,2,3,4&roll=7"),
]:
    positions.position(name, dict(parse_qsl(query)))
print(sorted(m for m in ("numba", "polars") if m in sys.modules))
"""


def test_the_server_answers_every_family_without_loading_numba(built_more: Path) -> None:
    """numba is half a second of CPU and about 60 MB in the server's process: the answers
    (the N-player games' checks included) run without it."""
    done = subprocess.run(
        [sys.executable, "-c", LOADS, str(built_more)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "[]"
