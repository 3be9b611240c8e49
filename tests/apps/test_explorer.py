"""`stb-pipeline explore`: the page embeds the library's answers, which are the tables', and in a
real (headless) browser it ranks the moves exactly as `stb-pipeline move` does, for one player
and for N players.

The browser tests need Debian's chromium and chromium-driver and the selenium package (see
.ci/run, which installs them); without them they are skipped, saying why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline import api
from pipeline.apps import explorer
from pipeline.apps.explorer import DATA_MARK, delayed_progress, render, template
from pipeline.games.registry import get_variant
from pipeline.store import tables
from tests.conftest import Result, invoke
from tests.support.browser import headless_chromium

VARIANTS = ("classic", "lever")
#: N-player variants: the two-player course game (shared tables, solved on a graph) and four
#: players (files of its own, solved block by block without a graph)
NPLAYER = ("two-player", "four-player")


def embedded_data(page: str) -> dict[str, Any]:
    """The JSON a written page embeds (the inverse of :func:`render`)."""
    head, tail = template().split(DATA_MARK)
    assert page.startswith(head) and page.endswith(tail), "not an explorer page of this version"
    return json.loads(page[len(head) : len(page) - len(tail)])


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """classic and lever (a choice of dice) built into a fresh directory."""
    directory = tmp_path_factory.mktemp("explorer-data")
    result = invoke(["build", "--variant", ",".join(VARIANTS), "--data-dir", directory])
    assert result.code == 0, result.stderr
    return directory


@pytest.fixture(scope="module")
def page(data: Path) -> Path:
    """The explorer page for the built variants, at its default place."""
    result = invoke(["explore", "--data-dir", data])
    assert result.code == 0, result.stderr
    assert "wrote" in result.stdout
    assert "not built, so not on the page: classic-score," in result.stdout
    return data / "explorer.html"


@pytest.fixture(scope="module")
def ndata(built_more: Path) -> Path:
    """two-player and four-player built into one directory (with the stake game, too big for
    the page, and a 16-tile box)."""
    return built_more


@pytest.fixture(scope="module")
def npage(ndata: Path) -> Path:
    """The explorer page of the N-player variants (by default: every built one)."""
    result = invoke(["explore", "--data-dir", ndata])
    assert result.code == 0, result.stderr
    assert "not built, so not on the page:" in result.stdout and "three-player," in result.stdout
    return ndata / "explorer.html"


def mask_of(tiles: list[int]) -> int:
    """The bitmask of a list of tiles."""
    return sum(1 << (t - 1) for t in tiles)


# -- the page without a browser ---------------------------------------------------------------


def test_page_is_self_contained(page: Path) -> None:
    text = page.read_text("utf-8")
    assert text.startswith("<!DOCTYPE html>")
    # no network: nothing is fetched from elsewhere
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert "<link" not in text and "@import" not in text
    assert [v["name"] for v in embedded_data(text)["variants"]] == list(VARIANTS)
    assert not list(page.parent.glob(".*.tmp")), "the atomic write left its temporary file"


@pytest.mark.parametrize("name", VARIANTS)
def test_embedded_json_matches_the_tables(data: Path, page: Path, name: str) -> None:
    found = {v["name"]: v for v in embedded_data(page.read_text("utf-8"))["variants"]}[name]
    states = tables.read_table(data, "states", name).sort("state_id")
    assert found["value"] == states["value"].to_list()
    assert found["choice"] == states["choice_options"].to_list()
    assert found["dice"] == states["dice"].fill_null(0).to_list()
    moves = tables.read_table(data, "moves", name)
    embedded = {
        (s, entry[0]): entry[1:] for s, entries in enumerate(found["moves"]) for entry in entries
    }
    by_node: dict[tuple[int, int], set[int]] = {}
    best: dict[tuple[int, int], int] = {}
    for row in moves.iter_rows(named=True):
        key, mask = (row["state_id"], row["roll"]), mask_of(row["move"])
        by_node.setdefault(key, set()).add(mask)
        assert found["value"][row["next_state_id"]] == row["value"]
        if row["is_best"]:
            best[key] = mask
    assert {k: set(v) for k, v in embedded.items()} == by_node
    assert {k: v[0] for k, v in embedded.items()} == best  # the policy's move comes first
    stuck = tables.read_table(data, "policy", name).filter(pl.col("stuck"))
    for state, value in stuck.select("state_id", "value").iter_rows():
        assert found["end"][state] == value
    edges = tables.read_table(data, "edges", name).select("dice", "roll", "prob").unique()
    assert sum(len(v) for v in found["rolls"].values()) == edges.height


# -- N players without a browser ---------------------------------------------------------------


@pytest.mark.parametrize("name", NPLAYER)
def test_nplayer_json_matches_the_tables(ndata: Path, npage: Path, name: str) -> None:
    """Every block's shares are the states table's columns, each mask's moves player 1's (the
    same in every block), each stuck roll's value the policy's, and the page's pick every
    policy move (the library's picks listed where a near tie is not the plain best)."""
    found = {v["name"]: v for v in embedded_data(npage.read_text("utf-8"))["variants"]}[name]
    assert found["kind"] == "players" and found["players"] == get_variant(name).make().n
    states = tables.read_table(ndata, "states", name).sort("state_id")
    f = 1 << found["rules"]["tiles"]
    for part in states.partition_by("player", "best_score", "best_count"):
        seat = part["player"][0]
        key = f"{seat}/{part['best_score'][0] or 0}/{part['best_count'][0] or 0}"
        block = found["blocks"][key]["shares"]
        assert block["value"] == part["value"].to_list()
        if seat > 1:
            assert block["holder"] == part["share_holder"].to_list()
        for k in range(seat + 1, found["players"] + 1):
            assert block[str(k)] == part[f"share_{k}"].to_list()
        assert len(block["value"]) == f
    moves = tables.read_table(ndata, "moves", name)
    for row in moves.filter(pl.col("state_id") < f).iter_rows(named=True):
        entry = next(e for e in found["moves"][row["state_id"]] if e[0] == row["roll"])
        assert mask_of(row["move"]) in entry[1:]
    assert (
        sum(len(e) - 1 for m in found["moves"] for e in m)
        == moves.filter(pl.col("state_id") < f).height
    )
    stuck = (
        tables.read_table(ndata, "policy", name)
        .filter(pl.col("stuck"))
        .join(states, on="state_id", suffix="_state")
        .select("player", "best_score", "best_count", "score", "value")
    )
    assert stuck.height
    for seat, best, count, score, value in stuck.iter_rows():
        at = found["possible"].index(score)
        assert found["blocks"][f"{seat}/{best or 0}/{count or 0}"]["end"][at] == value
    # the page's pick is the policy's everywhere: the first move worth exactly the best, or
    # the library's where that is not its pick (the page decides no tie)
    listed = {(key, mask, roll): move for key, mask, roll, move in found["picks"]}
    keys = {
        s: f"{p}/{b or 0}/{c or 0}"
        for s, p, b, c in states.select("state_id", "player", "best_score", "best_count").rows()
    }
    for row in moves.filter(pl.col("is_best")).iter_rows(named=True):
        key, mask = keys[row["state_id"]], row["state_id"] % f
        entry = next(e for e in found["moves"][mask] if e[0] == row["roll"])
        values = found["blocks"][key]["shares"]["value"]
        worth = [values[(row["state_id"] % f) & ~m] for m in entry[1:]]
        plain = entry[1 + worth.index(max(worth))]
        assert listed.get((key, mask, row["roll"]), plain) == mask_of(row["move"])


def test_a_variant_too_big_is_listed_not_dropped(
    ndata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variant over the page's budget is named on the page, with the reason and where to see
    it instead; asked for alone, it is refused with the same words."""
    size = explorer.size_of(
        explorer.payload_of(ndata, "two-player", explorer.built_rules(ndata, "two-player") or {})
    )
    monkeypatch.setattr(explorer, "MAX_VARIANT_BYTES", size + 1)  # four-player is bigger
    out = tmp_path / "page.html"
    result = invoke(["explore", "--data-dir", ndata, "-v", "two-player,four-player", "-o", out])
    assert result.code == 0, result.stderr
    assert "skipped four-player: too big to embed" in result.stdout
    assert "stb-pipeline serve" in result.stdout
    found = embedded_data(out.read_text("utf-8"))
    assert [v["name"] for v in found["variants"]] == ["two-player"]
    assert [o["name"] for o in found["omitted"]] == ["four-player"]
    alone = invoke(["explore", "--data-dir", ndata, "-v", "four-player", "-o", out, "--force"])
    assert alone.code == 2 and "too big to embed" in alone.stderr, alone.stderr
    assert alone.stderr.count("\n") == 1


def test_text_in_the_data_cannot_end_the_script() -> None:
    nasty = {"name": "a</script><script>alert(1)</script><!--", "value": [0.1]}
    page = render([nasty])
    assert page.count("</script>") == 1 and "<!--" not in page
    assert embedded_data(page) == {"variants": [nasty]}


def test_progress_is_quiet_when_fast() -> None:
    said: list[str] = []
    delayed_progress(said.append)("quick")
    delayed_progress(said.append, after=0.0)("slow")
    assert said == ["slow"]


# -- the page in a headless browser ------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless chromium driven by selenium; skipped when either is missing."""
    yield from headless_chromium(tmp_path_factory.mktemp("chromium-profile"))


def open_page(browser: Any, page: Path, hash_: str = "") -> None:
    """Load the page (a fresh load, so the hash is read at start) and wait until it is drawn
    (a few seconds at most: a busy machine parses the page's megabytes of data slowly)."""

    browser.get("about:blank")
    browser.get(page.as_uri() + hash_)
    # `get` returns at the load event, and on a loaded machine the page's script may not have
    # drawn yet: wait for its mark (a deadline, not a timing)
    deadline = time.monotonic() + 30
    while browser.execute_script("return document.body.dataset.ready") != "true":
        assert time.monotonic() < deadline, f"the page never finished drawing {hash_}"
        time.sleep(0.02)


def click(browser: Any, selector: str) -> None:
    browser.find_element("css selector", selector).click()


def shown_moves(browser: Any) -> list[tuple[list[int], float, float, bool]]:
    """The ranked moves on the page: tiles, value, regret (full precision), policy's move."""
    rows = browser.find_elements("css selector", "#moves tr")
    return [
        (
            [int(t) for t in row.get_attribute("data-move").split(",")],
            float(row.get_attribute("data-value")),
            float(row.get_attribute("data-regret")),
            row.get_attribute("data-best") == "true",
        )
        for row in rows
    ]


def cli_moves(
    data: Path, variant: str, tiles: str, roll: int, extra: tuple[str, ...] = ()
) -> list[tuple[list[int], float]]:
    """The moves `stb-pipeline move` prints, in its order (values to 12 digits)."""
    args = ["move", "--variant", variant, "--data-dir", data, tiles, str(roll), *extra]
    result: Result = invoke(args)
    assert result.code == 0, result.stderr
    rows = re.findall(r"│\s*(\[[\d, ]+\])\s*│[^│]*│\s*([-\d.e+]+)\s*│", result.stdout)
    return [([int(t) for t in re.findall(r"\d+", move)], float(value)) for move, value in rows]


def assert_same_as_move(
    browser: Any, data: Path, variant: str, tiles: str, roll: int, **seat: Any
) -> None:
    """The page's ranked moves are those of `stb-pipeline move`: tiles, order, values (``seat``:
    player, best_score, best_count of an N-player position)."""
    shown = shown_moves(browser)
    extra = [(f"--{k.replace('_', '-')}", str(v)) for k, v in seat.items() if v is not None]
    printed = cli_moves(data, variant, tiles, roll, tuple(x for pair in extra for x in pair))
    assert [m for m, *_ in shown] == [m for m, _ in printed]
    for (_, value, *_), (_, cli_value) in zip(shown, printed, strict=True):
        assert value == pytest.approx(cli_value, abs=1e-9)
    # the full-precision answer behind `move`: values and regrets to the last bit
    found = api.position(variant, tiles, roll, data_dir=data, **seat)
    exact = [(m.move, m.value, m.regret) for m in found.moves]
    assert [(m, v, r) for m, v, r, _ in shown] == exact
    assert [m for m, *_, best in shown if best] == [found.best_move]


def test_browser_classic_by_clicks(browser: Any, page: Path, data: Path) -> None:
    open_page(browser, page)
    browser.find_element("id", "variant").send_keys("classic")
    for tile in (6, 7, 8, 9):
        click(browser, f'.tile[data-tile="{tile}"]')
    click(browser, '#rolls [data-roll="7"]')
    assert browser.execute_script("return location.hash") == "#classic/12345/7"
    value = float(browser.find_element("id", "value").get_attribute("data-value"))
    assert value == api.expect("classic", "12345", data_dir=data)
    assert_same_as_move(browser, data, "classic", "12345", 7)
    # playing the best move (shut 3 and 4) goes to 125, ready for the next roll
    click(browser, "#moves tr.best button")
    assert browser.execute_script("return location.hash") == "#classic/125"
    assert not shown_moves(browser)


def test_browser_keyboard_toggles_a_tile(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(browser, page, "#classic/123456789")
    tile = browser.find_element("css selector", '.tile[data-tile="9"]')
    tile.send_keys(Keys.SPACE)
    assert tile.get_attribute("aria-pressed") == "true"
    assert browser.execute_script("return location.hash") == "#classic/12345678"
    tile.send_keys(Keys.ENTER)
    assert tile.get_attribute("aria-pressed") == "false"


def test_browser_lever_dice_choice(browser: Any, page: Path, data: Path) -> None:
    open_page(browser, page, "#lever")
    for tile in (7, 8, 9):
        click(browser, f'.tile[data-tile="{tile}"]')
    dice = browser.find_elements("css selector", "#dice [data-dice]")
    assert [d.get_attribute("data-dice") for d in dice] == ["1", "2"]
    click(browser, '#dice [data-dice="1"]')
    rolls = browser.find_elements("css selector", "#rolls [data-roll]")
    assert [r.get_attribute("data-roll") for r in rolls] == ["1", "2", "3", "4", "5", "6"]
    click(browser, '#rolls [data-roll="1"]')
    assert browser.execute_script("return location.hash") == "#lever/123456/1/1"
    assert_same_as_move(browser, data, "lever", "123456", 1)
    # the state's value is the better of its two dice choices
    choices = [browser.execute_script(f"return diceValue(state.v, 63, {d})") for d in (1, 2)]
    assert max(choices) == pytest.approx(api.expect("lever", "123456", data_dir=data))


@pytest.mark.parametrize(
    ("variant", "tiles", "roll"),
    [
        ("classic", "123457", 9),  # the policy's move trails a tie by 1.4e-17: ranked second
        ("classic", "1456", 11),  # an exact tie: the policy's move first
        ("classic", "123456789", 12),
        ("lever", "1237", 8),
        ("lever", "123", 5),
    ],
)
def test_browser_shared_links(
    browser: Any, page: Path, data: Path, variant: str, tiles: str, roll: int
) -> None:
    open_page(browser, page, f"#{variant}/{tiles}/{roll}")
    assert_same_as_move(browser, data, variant, tiles, roll)


def test_browser_stuck_roll(browser: Any, page: Path) -> None:
    open_page(browser, page, "#classic/9/4")
    status = browser.find_element("id", "moves-status")
    assert status.get_attribute("data-stuck") == "true" and "score 9" in status.text
    assert not shown_moves(browser)


def test_browser_screenshot(browser: Any, page: Path, tmp_path: Path) -> None:
    open_page(browser, page, "#classic/12345/7")
    shot = tmp_path / "explorer.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one
    if target := os.environ.get("STB_EXPLORER_SHOT"):  # to look at it: STB_EXPLORER_SHOT=x.png
        shutil.copy(shot, target)


def test_browser_dice_choice_by_keyboard_and_link(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(browser, page, "#lever/123456//1")
    one = browser.find_element("css selector", '#dice [data-dice="1"]')
    assert one.get_attribute("aria-checked") == "true"
    one.send_keys(Keys.ARROW_RIGHT)  # radio group: arrows move the choice
    two = browser.find_element("css selector", '#dice [data-dice="2"]')
    assert two.get_attribute("aria-checked") == "true"
    assert browser.switch_to.active_element == two
    assert browser.execute_script("return location.hash") == "#lever/123456//2"


# -- N players in the browser -------------------------------------------------------------------


def seat_kwargs(seat: int, best: int, count: int) -> dict[str, int | None]:
    """The library's keywords for a seat (player 1 has no best score)."""
    if seat == 1:
        return {"player": 1, "best_score": None, "best_count": None}
    return {"player": seat, "best_score": best, "best_count": count}


def assert_same_position(
    browser: Any, data: Path, variant: str, seat: int, best: int, count: int, tiles: str
) -> None:
    """The page's value and every player's share are the library's and the states table's."""
    kw = seat_kwargs(seat, best, count)
    value = float(browser.find_element("id", "value").get_attribute("data-value"))
    assert value == api.expect(variant, tiles, data_dir=data, **kw)
    state = get_variant(variant).parse_state(tiles, **kw)
    row = tables.read_table(data, "states", variant).row(
        by_predicate=pl.col("state_id") == state, named=True
    )
    shown = {
        r.get_attribute("data-share"): float(r.get_attribute("data-value"))
        for r in browser.find_elements("css selector", "#shares tr")
    }
    expected = {str(seat): row["value"]}
    expected |= {str(k): row[f"share_{k}"] for k in range(seat + 1, row["players"] + 1)}
    if seat > 1:
        expected["holder"] = row["share_holder"]
    if seat - 1 > count:
        expected["beaten"] = row["share_beaten"]
    assert shown == expected
    # the shares of a position sum to the game's total (1: the win is shared out)
    total = sum(
        v * (count if k == "holder" else seat - 1 - count if k == "beaten" else 1)
        for k, v in shown.items()
    )
    assert total == pytest.approx(1.0, abs=1e-12)


def test_browser_nplayer_four_player_as_move_answers(
    browser: Any, npage: Path, ndata: Path
) -> None:
    """The issue's question: player 3, the best score so far 11 held by one player, tiles 1, 3,
    4 open and a roll of 7: the page answers as `stb-pipeline move --variant four-player 134 7
    --player 3 --best-score 11 --best-count 1`."""
    open_page(browser, npage, "#four-player/3/11/1/134/7")
    assert_same_position(browser, ndata, "four-player", 3, 11, 1, "134")
    assert_same_as_move(
        browser, ndata, "four-player", "134", 7, player=3, best_score=11, best_count=1
    )


def test_browser_nplayer_by_clicks(browser: Any, npage: Path, ndata: Path) -> None:
    from selenium.webdriver.support.ui import Select

    open_page(browser, npage, "#four-player")
    assert browser.find_element("id", "seat-card").is_displayed()
    Select(browser.find_element("id", "seat")).select_by_value("4")
    Select(browser.find_element("id", "best")).select_by_value("10")
    Select(browser.find_element("id", "count")).select_by_value("2")
    for tile in (3, 6, 7, 8, 9):
        click(browser, f'.tile[data-tile="{tile}"]')
    click(browser, '#rolls [data-roll="8"]')
    assert browser.execute_script("return location.hash") == "#four-player/4/10/2/1245/8"
    assert_same_position(browser, ndata, "four-player", 4, 10, 2, "1245")
    assert_same_as_move(
        browser, ndata, "four-player", "1245", 8, player=4, best_score=10, best_count=2
    )
    # back to player 1: no best score, and the one-player boxes keep their page
    Select(browser.find_element("id", "seat")).select_by_value("1")
    assert browser.execute_script("return location.hash") == "#four-player/1/0/0/1245"
    assert_same_position(browser, ndata, "four-player", 1, 0, 0, "1245")


@pytest.mark.parametrize(
    ("variant", "seat", "best", "count", "tiles", "roll"),
    [
        ("four-player", 1, 0, 0, "123456789", 7),
        ("four-player", 2, 14, 1, "13479", 10),
        ("four-player", 4, 9, 1, "123456", 6),
        ("two-player", 1, 0, 0, "12345678", 9),
        ("two-player", 2, 12, 1, "123456789", 11),  # the course game's second player
    ],
)
def test_browser_nplayer_links(
    browser: Any,
    npage: Path,
    ndata: Path,
    variant: str,
    seat: int,
    best: int,
    count: int,
    tiles: str,
    roll: int,
) -> None:
    open_page(browser, npage, f"#{variant}/{seat}/{best}/{count}/{tiles}/{roll}")
    assert_same_position(browser, ndata, variant, seat, best, count, tiles)
    assert_same_as_move(browser, ndata, variant, tiles, roll, **seat_kwargs(seat, best, count))


def test_browser_nplayer_stuck_and_won(browser: Any, npage: Path, ndata: Path) -> None:
    """A roll with no move passes the turn, worth what the policy says; a last player already
    below the best score has won."""
    open_page(browser, npage, "#four-player/2/11/1/9/4")
    status = browser.find_element("id", "moves-status")
    assert status.get_attribute("data-stuck") == "true" and "player 3 plays next" in status.text
    found = api.position(
        "four-player", "9", 4, data_dir=ndata, player=2, best_score=11, best_count=1
    )
    assert found.passes_turn and float(status.get_attribute("data-value")) == found.value
    open_page(browser, npage, "#four-player/4/11/3/12")
    assert "won" in browser.find_element("id", "moves-status").text
    assert not browser.find_elements("css selector", "#rolls [data-roll]")
    assert_same_position(browser, ndata, "four-player", 4, 11, 3, "12")


def test_browser_nplayer_policy_listed_off_the_tie_rule(
    browser: Any, npage: Path, tmp_path: Path
) -> None:
    """Where the tables' policy is not the tie rule's pick (listed in ``picks``), the page marks
    the listed move as the policy's, ranked as `move` ranks it: first among equal regrets."""
    found = embedded_data(npage.read_text("utf-8"))
    four = next(v for v in found["variants"] if v["name"] == "four-player")
    open_page(browser, npage, "#four-player/1/0/0/123456789/7")
    shown = shown_moves(browser)
    assert shown[0][3] and shown[0][2] == 0.0
    # say the tables picked the second move (here only in the page's data: the page still
    # reads such a list, which the library's answers never need)
    other = shown[1][0]
    four["picks"] = [["1/0/0", 511, 7, mask_of(other)]]
    page = tmp_path / "picks.html"
    page.write_text(render(found["variants"], found.get("omitted")), "utf-8")
    open_page(browser, page, "#four-player/1/0/0/123456789/7")
    again = shown_moves(browser)
    assert [m for m, *_, best in again if best] == [other]
    assert sorted((m, v, r) for m, v, r, _ in again) == sorted((m, v, r) for m, v, r, _ in shown)


def test_browser_lists_a_variant_too_big(
    browser: Any, ndata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorer, "MAX_VARIANT_BYTES", 3_000_000)  # four-player: 5.8 MB
    out = tmp_path / "page.html"
    result = invoke(["explore", "--data-dir", ndata, "-o", out])
    assert result.code == 0, result.stderr
    open_page(browser, out, "#two-player/2/12/1/123456789/11")
    note = browser.find_element("id", "omitted")
    assert note.is_displayed() and "four-player" in note.text and "too big" in note.text
    options = browser.find_elements("css selector", "#variant option")
    assert [o.get_attribute("value") for o in options] == ["two-player"]


def test_explore_says_why_it_leaves_a_variant_out_in_few_lines(tmp_path: Path) -> None:
    """Issue 41: a built custom box was left off the page without a word, and each default
    not built took a "skipped" line of its own (11 of them)."""
    data = tmp_path / "data"
    for args in (
        ["--variant", "lever,knucklebones-2x2"],
        ["--tiles", "5", "--name", "mybox"],
        ["--tiles", "13", "--objective", "score", "--name", "big13"],
    ):
        assert invoke(["build", *args, "-d", data, "-q"]).code == 0
    result = invoke(["explore", "-d", data, "-o", tmp_path / "page.html"])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("wrote") and lines[0].endswith(": lever, mybox")
    assert (
        sum(line.startswith("not built") for line in lines) == 1 and "skipped" not in result.stdout
    )
    assert "left out big13: 13 tiles, the page takes at most 12" in result.stdout
    assert (
        "left out knucklebones-2x2: the page draws one row of Shut the Box tiles" in result.stdout
    )
    assert len(lines) == 4
    named = invoke(["explore", "-d", data, "-v", "mybox", "-o", tmp_path / "mine.html"])
    assert named.code == 0 and named.stdout.startswith(f"wrote {tmp_path / 'mine.html'}")
