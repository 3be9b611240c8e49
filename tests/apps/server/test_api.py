"""`stb-pipeline serve`'s JSON API: the answers are the tables' (their policy and moves rows,
and the same as `move`, `expect` and the Python API), every bad request is a one-line 400, a
damaged table is a clear message while the rest keeps serving, and nothing is written."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline import api
from pipeline.apps.knucklebones.position import solve
from pipeline.games.registry import get_variant
from tests.conftest import REPO, invoke
from tests.support import tables
from tests.support.wait import wait_until

pytest.importorskip("starlette", reason="serve needs the [serve] extra")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient

from pipeline.apps.server.web import create_app, json_body


@pytest.fixture(scope="module")
def client(built: Path) -> Iterator[TestClient]:
    """The application over the session's build of every variant (its search worker, started
    by the full game's positions, stopped at the end)."""
    app = create_app(built)
    yield TestClient(app)
    app.state.searches.close()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 13-tile box: stored on its own, policy as bitmasks, served from value arrays."""
    data = tmp_path_factory.mktemp("serve-big")
    result = invoke(["build", "--tiles", "13", "--objective", "score", "--data-dir", data])
    assert result.code == 0, result.stderr
    return data


def get(client: TestClient, url: str, status: int = 200) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def same_as_move(found: dict[str, Any], data: Path, variant: str, **extra: Any) -> None:
    """The served answer is the tables' (policy and moves rows) and the Python API's: the same
    moves in the same order, with the same values and regrets to the last bit."""
    tables.check_position(found, data, variant)
    moves = api.move_values(variant, found["state"]["tiles"], found["roll"], data_dir=data, **extra)
    served = [(m["move"], m["value"], m["regret"], m["best"]) for m in found["moves"]]
    assert served == [
        tuple(r.values())
        for r in moves.select("move", "value", "regret", "is_best").iter_rows(named=True)
    ]


def test_index_lists_built_and_unbuilt(client: TestClient) -> None:
    index = get(client, "/.json")
    built = {v["name"] for v in index["built"]}
    assert {"classic", "two-player", "double-shutter", "knucklebones-2x2"} <= built
    unbuilt = {v["name"]: v for v in index["unbuilt"]}
    assert unbuilt["knucklebones-3x2"]["build"] == "stb-pipeline build --variant knucklebones-3x2"
    assert unbuilt["knucklebones"]["searchable"] and unbuilt["knucklebones"]["build"] is None
    assert index["problems"] == []
    assert "Access-Control-Allow-Origin" not in client.get("/.json").headers  # CORS off


@pytest.mark.parametrize(
    ("variant", "tiles", "roll", "extra"),
    [
        ("classic", "12345", 7, {}),
        ("classic", "123457", 9, {}),  # the policy's move trails a tie by 1.4e-17
        ("lever", "123456", 1, {}),
        ("digital-score", "1789", 8, {}),
        ("two-player", "123", 3, {"player": 2, "p1_score": 5}),
        ("two-player", "123456789", 8, {"player": 1}),
    ],
)
def test_positions_equal_move(
    client: TestClient, built: Path, variant: str, tiles: str, roll: int, extra: dict
) -> None:
    query = "&".join(f"{k}={v}" for k, v in extra.items())
    found = get(client, f"/{variant}/position.json?tiles={tiles}&roll={roll}&{query}")
    p1 = {"p1_score": extra["p1_score"]} if "p1_score" in extra else {}
    same_as_move(found, built, variant, **p1)
    assert found["state"]["value"] == api.expect(variant, tiles, data_dir=built, **p1)
    # the link restores the position
    again = get(client, found["link"].replace("/position?", "/position.json?"))
    assert again == found


def test_double_shutter_by_its_digits(client: TestClient, built: Path) -> None:
    found = get(client, "/double-shutter/position.json?state=000000012&roll=8")
    assert found["state"]["tiles"] == "front=1234567 back=23456789"
    assert found["state"]["state"] == "000000012"
    same_as_move(found, built, "double-shutter")  # every roll's best move is the policy's


def test_two_player_fields_come_from_the_states_table(client: TestClient) -> None:
    info = get(client, "/two-player.json")["variant"]
    fields = {f["name"]: f for f in info["fields"]}
    # the N-player family's fields; p1_score (= best_score) and the shares are no menus
    assert list(fields) == ["player", "best_score", "best_count"]
    assert fields["player"]["choices"] == [1, 2]
    assert 43 in fields["best_score"]["choices"] and fields["best_count"]["choices"] == [1]
    stuck = get(client, "/two-player/position.json?tiles=9&player=1&roll=4")
    assert stuck["outcome"]["kind"] == "pass" and stuck["moves"] == []


@pytest.fixture(scope="module")
def nplayer(built_more: Path) -> Path:
    """two-player and four-player (stored on its own, built without a graph) in one data
    directory (with the stake game and a 16-tile box)."""
    return built_more


def same_shares(found: dict[str, Any], data: Path, variant: str, tiles: str, extra: dict) -> None:
    """Every player's share is the states table's, weighted by how many players get it the
    shares add up to 1 (a share of the win), and the mover's is the position's value."""
    shares = found["state"]["shares"]
    n = found["state"]["players"]
    seat = extra.get("player", 1)
    assert sum(s["players"] for s in shares) == n
    assert abs(sum(s["players"] * s["share"] for s in shares) - 1.0) <= 1e-12
    mover = next(s for s in shares if s["who"] == "mover")
    assert mover["seat"] == seat
    # (two-player's value is the course's numbers bit for bit, its share the N-player sum's)
    assert abs(mover["share"] - found["state"]["value"]) <= 1e-12
    assert [s["seat"] for s in shares if s["seat"] is not None] == list(range(seat, n + 1))
    state_id = get_variant(variant).parse_state(tiles, **extra)
    row = tables.state(data, variant, state_id)
    for s in shares:
        column = f"share_{s['seat']}" if s["seat"] is not None else f"share_{s['who']}"
        assert s["share"] == row[column]


@pytest.mark.parametrize(
    ("variant", "tiles", "roll", "extra"),
    [
        ("four-player", "134", 7, {"player": 3, "best_score": 11, "best_count": 1}),
        ("four-player", "12345", 6, {"player": 2, "best_score": 20}),
        ("four-player", "1234", 5, {"player": 4, "best_score": 9, "best_count": 2}),
        ("four-player", "123456789", 8, {}),
        ("two-player", "13456789", 12, {"player": 2, "best_score": 17}),
        ("two-player", "123456789", 9, {"player": 1}),
    ],
)
def test_nplayer_positions_equal_the_library(
    nplayer: Path, variant: str, tiles: str, roll: int, extra: dict
) -> None:
    from pipeline import api

    client = TestClient(create_app(nplayer))
    query = "".join(f"&{k}={v}" for k, v in extra.items())
    found = get(client, f"/{variant}/position.json?tiles={tiles}&roll={roll}{query}")
    lib = {k: v for k, v in extra.items() if k != "player" or v != 1}
    lib["player"] = extra.get("player")
    moves = api.move_values(variant, tiles, roll, data_dir=nplayer, **lib)
    served = [(m["move"], m["value"], m["regret"], m["best"]) for m in found["moves"]]
    assert served == [
        (r["move"], r["value"], r["regret"], r["is_best"]) for r in moves.iter_rows(named=True)
    ]
    best = api.best_move(variant, tiles, roll, data_dir=nplayer, **lib)
    assert [m["move"] for m in found["moves"] if m["best"]] == [best]
    assert found["state"]["value"] == api.expect(variant, tiles, data_dir=nplayer, **lib)
    tables.check_position(found, nplayer, variant)
    seat = extra.get("player", 1)
    fields = found["state"]["fields"]
    assert fields["player"] == seat and fields["best_score"] == extra.get("best_score")
    same_shares(found, nplayer, variant, tiles, extra)
    again = get(client, found["link"].replace("/position?", "/position.json?"))
    assert again == found  # the link restores the position
    info = get(client, f"/{variant}.json")["variant"]
    assert [f["name"] for f in info["fields"]] == ["player", "best_score", "best_count"]


def test_two_player_keeps_p1_score(nplayer: Path) -> None:
    """Two-player's p1_score is still accepted: it is the best score, and player 2 moves."""
    client = TestClient(create_app(nplayer))
    old = get(client, "/two-player/position.json?tiles=13456789&p1_score=17&roll=12")
    new = get(client, "/two-player/position.json?tiles=13456789&player=2&best_score=17&roll=12")
    assert old == new


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("/four-player/position.json?tiles=134&player=5&best_score=11", "not a seat"),
        ("/four-player/position.json?tiles=134&player=0", "not a seat"),
        ("/four-player/position.json?tiles=134&player=3&best_score=100", "cannot finish a turn"),
        ("/four-player/position.json?tiles=134&player=3&best_score=0", "must be positive"),
        ("/four-player/position.json?tiles=134&player=3&best_score=11&best_count=3", "shared"),
        ("/four-player/position.json?tiles=134&player=3&best_score=11&best_count=0", "shared"),
        ("/four-player/position.json?tiles=134&player=1&best_score=11", "plays first"),
        ("/four-player/position.json?tiles=134&best_score=11", "plays first"),
        ("/four-player/position.json?tiles=134&player=3", "needs the best score"),
        ("/four-player/position.json?tiles=134&p1_score=11", "for two players"),
        ("/four-player/position.json?tiles=134&player=3&best_score=x", "whole number"),
        ("/four-player/position.json?tiles=134&share_3=1", "unknown parameter"),
        ("/four-player/position.json?tiles=134&players=4", "unknown parameter"),
        ("/two-player/position.json?tiles=134&player=2&p1_score=11&best_score=9", "not both"),
        ("/two-player/position.json?tiles=134&player=3&best_score=11", "not a seat"),
    ],
)
def test_nplayer_impossible_positions_are_one_line_400s(
    nplayer: Path, url: str, words: str
) -> None:
    response = TestClient(create_app(nplayer)).get(url)
    assert response.status_code == 400, (url, response.text[:200])
    message = response.json()["error"]
    assert words in message and "\n" not in message and "--" not in message


@pytest.mark.parametrize(
    ("tiles", "roll"), [("1,2,3,4,5,6,7,8,9,10,11,12,13", 12), ("1,3,5,13", 9), ("2,13", 2)]
)
def test_big_box_from_value_arrays_equals_move(big: Path, tiles: str, roll: int) -> None:
    client = TestClient(create_app(big))
    name = next(v["name"] for v in get(client, "/.json")["built"])
    found = get(client, f"/{name}/position.json?tiles={tiles}&roll={roll}")
    tables.check_position(found, big, name)  # every roll's best move is the policy's
    shown = invoke(["move", "--variant", name, tiles, str(roll), "-d", big])
    assert shown.code == 0 and f"best move {found['moves'][0]['move']}" in shown.stdout


@pytest.mark.parametrize("variant", ["classic-score", "digital-score", "classic"])
def test_stuck_values_in_plain_python_are_the_games(variant: str) -> None:
    import numpy as np

    game = get_variant(variant).make()
    ids = np.arange(1 << game.r.tiles, dtype=np.int64)
    expected = game.stuck_values(ids).tolist()
    assert [game.stuck_value(int(s)) for s in ids] == expected


def test_knucklebones_exact_from_the_tables(client: TestClient, built: Path) -> None:
    url = "/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=4"
    found = get(client, url)
    assert found["exact"] and found["source"] == "tables" and found["depth"] is None
    solved = solve("4_/1_", "_/3_", 4, depth=1, variant="knucklebones-2x2", data_dir=built)
    assert solved.exact and solved.tables == ("knucklebones-2x2", "knucklebones-2x2-score")
    by_col = {c.column: c.win for c in solved.columns}
    assert {c["column"]: c["value"] for c in found["columns"]} == by_col
    score = get(client, url.replace("2x2", "2x2-score"))
    assert {c["column"]: c["value"] for c in score["columns"]} == {
        c.column: c.diff for c in solved.columns
    }
    # the best column is the policy's (its boards in canonical order: columns as given here)
    for variant, answer in (("knucklebones-2x2", found), ("knucklebones-2x2-score", score)):
        state_id = get_variant(variant).parse_state(found["board"])
        policy = next(r for r in tables.policy(built, variant, state_id) if r["roll"] == 4)
        assert answer["columns"][0]["best"] and answer["columns"][0]["column"] == policy["best"][0]
        assert tables.close(answer["value"], tables.state(built, variant, state_id)["value"])


def test_knucklebones_full_game_is_a_marked_estimate(client: TestClient) -> None:
    found = get(client, "/knucklebones/position.json?board=44_/1__/___;___/3__/___&die=4&depth=2")
    assert not found["exact"] and found["source"] == "search" and found["depth"] == 2
    solved = solve("44_/1__/___", "___/3__/___", 4, depth=2)
    assert {c["column"]: c["win"] for c in found["columns"]} == {
        c.column: c.win for c in solved.columns
    }
    assert found["columns"][0]["column"] == solved.best.column
    # a knocked-out die leaves: the 4 placed in column 2 removes nothing, in column 1 the 3 stays
    after = {c["column"]: c["next"] for c in found["columns"]}
    assert after[2] == "_/3/_;44/14/_"


BAD = [
    # (url, words in the message)
    ("/" + "x" * 300 + ".json", "longer than"),
    ("/classic/position.json?tiles=12a", "not a tile number"),
    ("/classic/position.json?tiles=0", "not in this box"),
    ("/classic/position.json?tiles=1123", "listed twice"),
    ("/classic/position.json?tiles=12345&roll=13", "impossible"),
    ("/classic/position.json?tiles=12345&roll=-1", "impossible"),
    ("/classic/position.json?tiles=12345&roll=1e3", "whole number"),
    ("/classic/position.json?tiles=12345&roll=99999999999999999999", "whole number"),
    ("/classic/position.json?tiles=12345&rol=7", "unknown parameter"),
    ("/classic/position.json?tiles=1&tiles=2", "given twice"),
    ("/classic/position.json?tiles=" + "1" * 5000, "longer than"),
    ("/classic/position.json?tiles=%00%01", "not printable"),
    ("/classic/position.json", "name the position"),
    ("/classic/position.json?id=600", "is not a state of variant classic"),
    ("/two-player/position.json?tiles=123&player=7", "not a seat"),
    ("/two-player/position.json?tiles=123&player=x", "whole number"),
    ("/double-shutter/position.json?state=0003", "one digit 0, 1 or 2"),
    ("/knucklebones-2x2/position.json?board=4_/1_", "MOVER;OPPONENT"),
    ("/knucklebones-2x2/position.json?board=47/1_;_/3_&die=4", "not a die face"),
    ("/knucklebones-2x2/position.json?board=4_/1_;4_/3_&die=4", "stands on both"),
    ("/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=0", "between 1 and 6"),
    ("/knucklebones/position.json?board=_/_/_;_/_/_&die=1&depth=9", "between 1 and 5"),
    ("/../../etc/passwd", "not a page"),
    ("/%2e%2e/%2e%2e/etc/passwd.json", "not a page"),
    ("/classic/..%2f..%2fmanifest.json", "not a page"),
    ("/.json?x=1", "no parameters"),
    # an empty parameter is a mistake, not "absent" (issue 30: roll= answered without a roll)
    ("/classic/position.json?tiles=12345&roll=", "'roll' is empty"),
    ("/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=", "'die' is empty"),
    ("/knucklebones/position.json?board=_/_/_;_/_/_&die=1&depth=", "'depth' is empty"),
    ("/two-player/position.json?tiles=123&player=", "'player' is empty"),
    ("/classic/position.json?id=", "'id' is empty"),
    ("/classic.json?x=", "'x' is empty"),
]


@pytest.mark.parametrize(("url", "words"), BAD)
def test_bad_requests_are_one_line_400s(client: TestClient, url: str, words: str) -> None:
    response = client.get(url)
    assert response.status_code == 400, (url, response.text[:200])
    if response.headers["content-type"].startswith("application/json"):
        message = response.json()["error"]
    else:
        message = response.text
    assert words in message, message[:300]
    assert "Traceback" not in response.text and 'File "' not in response.text
    if url.endswith(".json") or ".json?" in url:
        assert "\n" not in message
    html = client.get(url.replace(".json", "", 1))  # the page twin: the same 400
    assert html.status_code == 400 and "Traceback" not in html.text


@pytest.mark.parametrize(
    "url", ["/no-such-variant/position.json?tiles=1", "/no-such-variant.json", "/nosuch/position"]
)
def test_an_unknown_variant_is_a_one_line_404(client: TestClient, url: str) -> None:
    """Issue 48: no such variant is no such page (it was a 400, as a malformed request)."""
    response = client.get(url)
    assert response.status_code == 404
    text = response.json()["error"] if url.endswith(".json") or ".json?" in url else response.text
    assert "unknown variant" in text and "Traceback" not in response.text


def test_an_internal_error_is_one_line_json_and_logged(
    built: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(built)

    def broken() -> dict:
        raise KeyError("a bug")

    monkeypatch.setattr(app.state.positions, "index", broken)
    response = TestClient(app).get("/.json")
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal error; the server log has the details",
        "status": 500,
    }
    assert "KeyError" in caplog.text  # the details are in the server's log, not the answer


def test_an_empty_tiles_parameter_is_the_shut_box(client: TestClient) -> None:
    """``tiles=`` is a value (every tile shut), unlike any other empty parameter."""
    found = get(client, "/classic/position.json?tiles=")
    assert found["state"]["tiles"] == "" and found["state"]["value"] == 1.0


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("url", ["/.json", "/classic/position.json?tiles=1", "/classic.json"])
def test_only_get_and_the_405_is_json_on_a_json_path(
    client: TestClient, method: str, url: str
) -> None:
    response = client.request(method, url)
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {
        "error": f"method {method} is not allowed: this server only reads (GET)",
        "status": 405,
    }
    page = client.request(method, url.replace(".json", "", 1))  # the page twin: the page
    assert page.status_code == 405 and page.text.startswith("<!DOCTYPE html>")
    assert "this server only reads" in page.text and "Traceback" not in page.text


def test_damaged_and_missing_tables(built: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("states", "policy", "moves"):
        shutil.copy(built / f"{name}.parquet", data / f"{name}.parquet")
    client = TestClient(create_app(data))
    before = get(client, "/classic/position.json?tiles=12345&roll=7")
    assert before["moves"]
    (data / "moves.parquet").write_bytes(b"PAR1 not really")
    # the snapshot looks at the files at most once a second: still serving, the damage named
    wait_until(lambda: any("moves.parquet" in p for p in get(client, "/.json")["problems"]))
    # an answer reads the values alone (the rules list the moves): the same answer
    assert get(client, "/classic/position.json?tiles=12345&roll=7") == before
    (data / "states.parquet").write_bytes(b"garbage")
    wait_until(lambda: any("states.parquet" in p for p in get(client, "/.json")["problems"]))
    gone = get(client, "/classic/position.json?tiles=12345", 404)  # no states: not built
    assert "stb-pipeline build --variant classic" in gone["error"]
    missing = get(client, "/classic-score/position.json?tiles=1", 404)
    assert "stb-pipeline build --variant classic-score" in missing["error"]


def test_nothing_is_written(built: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in built.rglob("*")}
    client = TestClient(create_app(built))
    get(client, "/classic/position.json?tiles=12345&roll=7")
    get(client, "/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=4")
    assert {p: p.stat().st_mtime_ns for p in built.rglob("*")} == before


def test_cors_and_host_checks(built: Path) -> None:
    from pipeline.apps.server.web import loopback_hosts

    open_ = TestClient(create_app(built, cors=True))
    assert open_.get("/.json").headers["Access-Control-Allow-Origin"] == "*"
    assert loopback_hosts("0.0.0.0") is None  # off loopback: any Host
    guarded = TestClient(create_app(built, allowed_hosts=loopback_hosts("127.0.0.1")))
    for host in ("127.0.0.1:8025", "localhost", "LOCALHOST:80", "[::1]:8025", "127.0.0.1"):
        assert guarded.get("/.json", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "127.0.0.1.evil.example", "localhost:x", "[::1]x", ""):
        bad = guarded.get("/classic/position.json?tiles=1", headers={"Host": host})
        assert bad.status_code == 400, host
        # JSON like every other error of a .json path (it was starlette's plain text)
        assert bad.headers["content-type"].startswith("application/json")
        assert bad.json()["status"] == 400 and "is not this machine" in bad.json()["error"]
        page = guarded.get("/classic/position?tiles=1", headers={"Host": host})
        assert page.status_code == 400 and page.text.startswith("<!DOCTYPE html>")
        assert "is not this machine" in page.text


def test_page_embeds_its_answer(client: TestClient) -> None:
    page = client.get("/classic/position?tiles=12345&roll=7")
    assert page.status_code == 200 and page.text.startswith("<!DOCTYPE html>")
    assert '"tiles":"12345"' in page.text and "/*SERVE_DATA*/null" not in page.text
    assert "<script src" not in page.text and "http://" not in page.text  # nothing from elsewhere


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_command_serves_and_stops_cleanly_on_ctrl_c(built: Path) -> None:

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "--data-dir", str(built), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line
        response = wait_until(lambda: _get_or_none(f"http://127.0.0.1:{port}/.json"), 10.0)
        assert response.status_code == 200
        # the real server's own headers: no Server header naming its software
        looked = _get_or_none(f"http://127.0.0.1:{port}/classic/position.json?tiles=12345")
        assert looked.status_code == 200 and looked.json()["state"]["tiles"] == "12345"
        assert "server" not in looked.headers and looked.headers["x-content-type-options"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped" in err


@pytest.mark.parametrize("module", ["uvicorn", "orjson"])
def test_command_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, built: Path, module: str
) -> None:
    missing_dir = invoke(["serve", "--data-dir", built / "nope"])
    assert missing_dir.code == 2 and "does not exist" in missing_dir.stderr
    monkeypatch.setitem(sys.modules, module, None)
    result = invoke(["serve", "--data-dir", built])
    assert result.code == 2 and result.stderr.count("\n") == 1
    assert module in result.stderr and "pip install '.[serve]'" in result.stderr


def test_json_body_is_the_standard_json_and_refuses_what_json_cannot_hold(
    client: TestClient,
) -> None:
    """orjson writes the answers (a NaN would be null there): the same JSON as the standard
    library's, and a NaN or an infinity anywhere is an error, as ``allow_nan=False`` made it."""
    for url in (
        "/classic/position.json?tiles=12345&roll=7",
        "/two-player/position.json?tiles=123456789&p1_score=10",
        "/double-shutter/position.json?state=012000000&roll=8",
        "/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=4",
    ):
        data = client.get(url).json()
        assert "error" not in data, data
        assert json.loads(json_body(data)) == data  # every float the same
        assert json.loads(json_body(data)) == json.loads(json.dumps(data, allow_nan=False))
    assert json_body({"a": [1, None, {"b": 0.5}]}) == b'{"a":[1,null,{"b":0.5}]}'
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="NaN or an infinity"):
            json_body({"value": None, "rolls": [{"value": 0.25}, {"value": bad}]})


def test_missing_data_dir(built: Path) -> None:
    missing = invoke(["serve", "--data-dir", built / "nope"])
    assert missing.code == 2 and "does not exist" in missing.stderr


@pytest.mark.parametrize(
    "url",
    [
        "/classic/position.json?tiles=12345&roll=7",
        "/four-player/position.json?tiles=123456789&player=2&best_score=10&best_count=1&roll=5",
        "/double-shutter/position.json?state=0120000000&roll=8",
        "/knucklebones-2x2/position.json?board=4_/1_;_/3_&die=4",
        "/classic/position.json?tiles=12345&roll=x",  # a 400
        "/classic/position.json?tiles=1&tiles=2",  # a parameter given twice
        "/classic-score/position.json?tiles=1",  # not built: a 404
        "/no-such-game/position.json?tiles=1",
    ],
)
def test_the_lean_json_path_answers_as_starlette_would(built: Path, url: str) -> None:
    """A position's ``.json`` is sent before starlette's routing (what nearly every request
    is): the same status, headers and bytes as the route gives, errors included."""
    app = create_app(built, cors=True, allowed_hosts=["testserver"])
    client = TestClient(app)
    fast, taken = app.fast, []

    async def watched(scope: Any, send: Any) -> bool:
        taken.append(await fast(scope, send))
        return taken[-1]

    app.fast = watched
    lean = client.get(url)
    assert taken == [True]  # the lean path answered it
    app.fast = lambda scope, send: _not_taken()  # every request through starlette's route
    try:
        routed = client.get(url)
    finally:
        app.fast = fast
        app.state.searches.close()
    assert lean.status_code == routed.status_code
    assert lean.content == routed.content
    assert dict(lean.headers) == dict(routed.headers)
    assert lean.headers["content-type"] == "application/json"


async def _not_taken() -> bool:
    return False


@pytest.mark.parametrize("host", ["", " ", "[]", "[ ]"])
def test_an_empty_host_is_refused_not_every_interface(built: Path, host: str) -> None:
    """Issue 41: ``--host ''`` bound every interface with the Host check off."""
    result = invoke(["serve", "--data-dir", built, "--host", host, "--port", str(free_port())])
    assert result.code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "names no address" in result.stderr and "127.0.0.1" in result.stderr


def test_the_address_printed_is_one_a_browser_opens() -> None:
    from pipeline.apps.server.web import address, loopback_hosts, url_of

    assert url_of("[::1]", 8025) == "http://[::1]:8025/"  # it printed http://[[::1]]:8025/
    assert url_of("::1", 8025) == "http://[::1]:8025/"
    assert url_of("127.0.0.1", 80) == "http://127.0.0.1:80/"
    assert address("[::1]") == "::1" and address(" localhost ") == "localhost"
    assert loopback_hosts("[::1]") == loopback_hosts("::1") is not None


def test_a_damaged_variant_is_called_damaged_not_unbuilt(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: four-player's states cut in half under a running server answered one 503
    (whose hint read a literal `--variant NAME`), then 404 "not built" for ever, and the index
    listed it as unbuilt. Damaged is not unbuilt: a 503 naming the variant, every time."""
    from pipeline.store import directory

    monkeypatch.setattr(directory, "RESCAN_S", 0.0)  # look at the files on every request
    data = tmp_path / "data"
    shutil.copytree(built, data)
    small = ["--players", "3", "--tiles", "5", "--sides", "4", "--one-die", "forced"]
    small += ["--one-die-sum", "4", "--name", "three-small"]
    assert invoke(["build", *small, "-d", data, "-q"]).code == 0
    client = TestClient(create_app(data))
    url = "/three-small/position.json?tiles=12345&player=1&roll=5"
    assert get(client, url)["moves"]
    own = data / "variants" / "three-small" / "states.parquet"
    own.write_bytes(own.read_bytes()[: own.stat().st_size // 2])
    for _ in range(3):  # the first answer (reading the file) and the catalog's after it agree
        error = get(client, url, 503)["error"]
        assert error.startswith("three-small is built but its tables cannot be read: "), error
        assert "--variant three-small" in error and "NAME" not in error
    index = get(client, "/.json")
    assert [v["name"] for v in index["damaged"]] == ["three-small"]
    assert "three-small" not in {v["name"] for v in index["unbuilt"] + index["built"]}
    assert get(client, "/three-small.json", 503)["error"].startswith("three-small is built")
    # a shared file: manifest.json says which variants it held
    (data / "states.parquet").write_bytes(b"garbage")
    error = get(client, "/classic/position.json?tiles=12345", 503)["error"]
    assert error.startswith("classic is built but its tables cannot be read: "), error
    assert "classic" in {v["name"] for v in get(client, "/.json")["damaged"]}


def _get_or_none(url: str) -> Any:
    """The response to GET ``url``, None while the server does not listen yet."""
    import httpx

    try:
        return httpx.get(url, timeout=5)
    except httpx.ConnectError:
        return None
