"""The answers `serve` keeps (pipeline/apps/server/sent.py): a position asked again is the same
bytes without being answered again, errors are answered each time, the kept answers stay within
their memory (oldest out first), and a rebuild of the tables drops them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.apps.server.sent import OVERHEAD, SentAnswers
from tests.conftest import invoke
from tests.support.wait import wait_until

pytest.importorskip("starlette", reason="serve needs the [serve] extra")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient

from pipeline.apps.server.web import create_app

URL = "/classic/position.json?tiles=12345&roll=7"


def entry(body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return 200, [(b"content-length", str(len(body)).encode())], body


def test_kept_answers_stay_within_their_memory_oldest_out_first() -> None:
    size = 100 + len("/a") + len(b"q=1") + OVERHEAD  # one entry's cost, as the cache counts it
    kept = SentAnswers(max_bytes=2 * size)
    look = object()
    assert kept.get(("/a", b"q=1"), look) is None  # the first look: nothing kept
    for q in (b"q=1", b"q=2", b"q=3"):
        kept.put(("/a", q), look, entry(b"x" * 100))
    assert len(kept) == 2 and kept.bytes == 2 * size
    assert kept.get(("/a", b"q=1"), look) is None  # the oldest went
    assert kept.get(("/a", b"q=3"), look) == entry(b"x" * 100)
    kept.put(("/a", b"big"), look, entry(b"x" * 3 * size))  # larger than the whole: not kept
    assert kept.get(("/a", b"big"), look) is None and len(kept) == 2


def test_a_new_look_drops_every_kept_answer_and_an_old_one_is_not_kept() -> None:
    kept = SentAnswers(max_bytes=1 << 20)
    old, new = object(), object()
    kept.get(("/a", b""), old)
    kept.put(("/a", b""), old, entry(b"old"))
    assert kept.get(("/a", b""), old) == entry(b"old")
    assert kept.get(("/a", b""), new) is None and len(kept) == 0  # the tables changed
    kept.put(("/a", b""), old, entry(b"old"))  # answered before the change: not kept
    assert len(kept) == 0
    assert SentAnswers(0).get(("/a", b""), old) is None
    nothing = SentAnswers(0)
    nothing.get(("/a", b""), old)
    nothing.put(("/a", b""), old, entry(b"x"))
    assert len(nothing) == 0  # --answer-cache-mb 0 keeps none


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
