"""One answer behind every face (issue 30): for random positions of every family, the library's
answer is the tables' (their policy and moves rows, within 1e-12), and every face gives that
answer: `expect` and `move` on the command line, the Python API, the server's JSON, the
explorer's embedded data and `play`'s ranking.

Positions are drawn with a seeded generator (the seed is in the test's name) from every state
of each variant; for each, a roll is drawn among those possible.
"""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pipeline import api
from pipeline.answer.answers import Answers
from pipeline.apps import explorer
from pipeline.apps import teaching_game as play
from pipeline.games.registry import Variant, get_variant
from pipeline.store.directory import scan
from tests.conftest import BOX16, invoke
from tests.support import tables

#: (variant, which session build holds it): a family each at least; the box of 16 tiles is
#: streamed (its moves come from its rules), the N-player ones other than two-player are
#: solved without a graph.
FAMILIES = [
    ("classic", "built"),
    ("lever", "built"),
    ("digital-score", "built"),
    ("one-die-6-max2", "built"),
    ("twelve-tiles", "built"),
    ("double-shutter", "built"),
    ("double-shutter-zero", "built"),
    ("two-player", "built"),
    ("four-player", "built_more"),
    ("two-player-stake", "built_more"),
    (BOX16, "built_more"),
]
#: Positions drawn per variant (each with a roll).
DRAWS = 6
SEED = 30

starlette = pytest.importorskip("starlette", reason="serve needs the [serve] extra")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from pipeline.apps.server.web import create_app  # noqa: E402


@cache
def variant_of(data: Path, name: str) -> Variant:
    custom = scan(data).customs()
    return custom[name] if name in custom else get_variant(name)


def draws(answers: Answers, variant: Variant, rng: random.Random) -> list[tuple[int, int | None]]:
    """``DRAWS`` states (not terminal) and a possible roll of each."""
    ids = answers.arrays(variant)["state_id"].tolist()
    out: list[tuple[int, int | None]] = []
    while len(out) < DRAWS:
        state_id = ids[rng.randrange(len(ids))]
        rolls = [r.roll for r in answers.position(variant, state_id=state_id).rolls]
        if rolls:
            out.append((state_id, rng.choice(rolls)))
    return out


def position_args(found: dict[str, Any]) -> tuple[list[str], dict[str, int]]:
    """The command line's options and the API's keywords naming the answer's position."""
    fields = {k: v for k, v in found["state"]["fields"].items() if v is not None}
    options = [x for k, v in fields.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    return options, fields


@pytest.fixture(scope="module")
def data(request: pytest.FixtureRequest) -> dict[str, Path]:
    return {
        "built": request.getfixturevalue("built"),
        "built_more": request.getfixturevalue("built_more"),
    }


@pytest.mark.parametrize(("name", "where"), FAMILIES, ids=[f for f, _ in FAMILIES])
def test_every_face_gives_the_tables_answer(name: str, where: str, data: dict[str, Path]) -> None:
    directory = data[where]
    answers = Answers(directory)
    variant = variant_of(directory, name)
    client = TestClient(create_app(directory))
    rng = random.Random(f"{SEED}-{name}")
    for state_id, roll in draws(answers, variant, rng):
        found = answers.position(variant, state_id=state_id, roll=roll)
        mine = found.to_json()
        tables.check_position(mine, directory, name)  # the library is the tables
        assert all(repr(m["regret"]) != "-0.0" for m in mine["moves"])
        tiles = found.state.tiles
        options, fields = position_args(mine)
        # the Python API
        assert api.position(name, tiles, roll, data_dir=directory, **fields) == found
        assert api.expect(name, tiles, data_dir=directory, **fields) == found.state.value
        assert api.best_move(name, tiles, roll, data_dir=directory, **fields) == found.best_move
        table = api.move_values(name, tiles, roll, data_dir=directory, **fields)
        assert table.rows() == [
            (m.move, m.next_tiles, m.value, m.regret, m.best) for m in found.moves
        ]
        # the command line (what it prints: the value's repr, the best move and the moves)
        expect = invoke(["expect", "--variant", name, tiles, *options, "-d", directory])
        assert expect.code == 0, expect.stderr
        assert float(expect.stdout) == found.state.value
        move = invoke(["move", "--variant", name, tiles, str(roll), *options, "-d", directory])
        assert move.code == 0, move.stderr
        if found.best_move is None:
            assert f"value {found.value!r}" in move.stdout
        else:
            assert f"best move {found.best_move}  value {found.value!r}" in move.stdout
            printed = re.findall(r"│\s*(\[[-\d, ]+\])\s*│", move.stdout)
            assert printed == [str(m.move) for m in found.moves]
        # the server's JSON (by id, and by the link it gives)
        served = client.get(f"/{name}/position.json?id={state_id}&roll={roll}").json()
        assert {k: v for k, v in served.items() if k not in ("view", "link")} == mine
        again = client.get(served["link"].replace("/position?", "/position.json?")).json()
        assert again == served
        # play's ranking of the roll's moves
        if name in PLAYABLE:
            coach = play.Coach(directory, variant, answers)
            options_shown = coach.move_options(state_id, roll)
            assert [(o.value, o.loses, o.is_best, o.next_state) for o in options_shown] == [
                (m.value, m.regret, m.best, m.next_id) for m in found.moves
            ]


#: The variants `play` takes (Shut the Box, one player or several).
PLAYABLE = {name for name, _ in FAMILIES if not name.startswith("double-shutter")}


@pytest.mark.parametrize("name", ["classic", "lever", "two-player", "four-player"])
def test_the_explorer_embeds_the_answers(name: str, data: dict[str, Path]) -> None:
    """The explorer's data for a position is the library's: the value, each roll's moves with
    the pick first, the stuck value, and (N players) every share."""
    directory = data["built_more" if name == "four-player" else "built"]
    answers = Answers(directory)
    variant = get_variant(name)
    rules = explorer.built_rules(directory, name)
    assert rules is not None
    payload = explorer.payload_of(directory, name, rules)
    rng = random.Random(f"{SEED}-explorer-{name}")
    tiles = rules["tiles"]
    for state_id, roll in draws(answers, variant, rng):
        found, by_roll = answers.every_roll(variant, state_id)
        mask = state_id & ((1 << tiles) - 1)
        if payload.get("kind") == "players":
            key = "/".join(
                str(found.state.fields.get(f) or 0) for f in ("player", "best_score", "best_count")
            )
            block = payload["blocks"][key]
            assert block["shares"]["value"][mask] == found.state.value
        else:
            assert payload["value"][state_id] == found.state.value
        embedded = {row[0]: row[1:] for row in payload["moves"][mask]}
        for r in found.rolls:
            if r.kind == "move":
                labels = [m.label for m in by_roll[r.roll]]
                pick = next(m.label for m in by_roll[r.roll] if m.best)
                assert sorted(embedded[r.roll]) == sorted(labels)
                if payload.get("kind") == "players":  # the moves are player 1's: the page
                    # takes the first worth the block's best, or the library's pick listed
                    values = [block["shares"]["value"][mask ^ m] for m in embedded[r.roll]]
                    plain = embedded[r.roll][values.index(max(values))]
                    listed = {(k, m, roll): move for k, m, roll, move in payload["picks"]}
                    assert listed.get((key, mask, r.roll), plain) == pick
                else:
                    assert embedded[r.roll][0] == pick  # the pick first
            else:
                assert r.roll not in embedded
                if payload.get("kind") == "players":
                    score = int(answers.game(variant).mask_scores[mask])
                    at = payload["possible"].index(score)
                    assert block["end"][at] == r.value
                else:
                    assert payload["end"][state_id] == r.value
        assert roll in {r.roll for r in found.rolls}


@pytest.mark.parametrize("name", ["knucklebones-2x2", "knucklebones-2x2-score"])
def test_boards_give_the_tables_answer(name: str, built: Path) -> None:
    """Knucklebones positions: the position's value is the states table's, every column's
    value the moves table's, the best column the policy's; the API and the server say the
    same."""
    answers = Answers(built)
    variant = get_variant(name)
    client = TestClient(create_app(built))
    rng = random.Random(f"{SEED}-{name}")
    ids = answers.arrays(variant)["state_id"].tolist()
    checked = 0
    while checked < DRAWS:
        state_id = ids[rng.randrange(len(ids))]
        row = tables.state(built, name, state_id)
        if row["terminal"]:
            continue
        die = rng.randrange(1, 7)
        found = answers.board(variant, row["tiles"], die)
        assert tables.close(found.value, row["value"]) and found.exact
        policy = next(r for r in tables.policy(built, name, state_id) if r["roll"] == die)
        assert found.best is not None and [found.best.column] == policy["best"]
        by_column = {m["move"][0]: m for m in tables.moves(built, name, state_id, die)}
        for c in found.columns:
            if c.column in by_column:  # (two equal columns are one move, the first)
                assert tables.close(c.value, by_column[c.column]["value"])
        assert api.board(name, row["tiles"], die, data_dir=built) == found
        served = client.get(f"/{name}/position.json", params={"board": row["tiles"], "die": die})
        assert {k: v for k, v in served.json().items() if k != "link"} == found.to_json()
        checked += 1


@pytest.mark.parametrize("name", ["two-player", "four-player", "two-player-stake"])
def test_a_stuck_roll_is_worth_what_the_policy_says(name: str, built_more: Path) -> None:
    """A roll without a legal move passes the turn (or, for the last seat, ends the game): the
    library values it from the rules and the next state's shares, never reading the policy;
    it is the policy's stuck row (kind, next state, value), for a sample of every stuck state."""
    answers = Answers(built_more)
    variant = get_variant(name)
    rows = tables.rows(built_more, "policy", name, "stuck")
    stuck = {r["state_id"]: (r["kind"], r["next_state_id"], r["value"]) for r in rows}
    sample = random.Random(f"{SEED}-stuck-{name}").sample(sorted(stuck), 600)
    for state_id, (kind, nxt, value) in zip(sample, answers.stuck(variant, sample), strict=True):
        want = stuck[state_id]
        assert (kind, nxt) == want[:2] and tables.close(value, want[2]), (state_id, want)
    assert answers.index.reads == 1  # the states file alone


# -- Knucklebones: one answer on every face ---------------------------------------------------

#: Knucklebones boards and where their answers come from: the 2x2 board's tables in the shared
#: file (both objectives), the same board's tables written lean (the full game's layout, read a
#: row group at a time), and the full game searched (depths 1 and 2).
BOARDS = [
    ("knucklebones-2x2", "built", None),
    ("knucklebones-2x2-score", "built", None),
    ("knucklebones-2x2", "lean", None),
    ("knucklebones-2x2-score", "lean", None),
    ("knucklebones", "built", 1),
    ("knucklebones", "built", 2),
]
#: A row of `knucklebones solve`'s table: column (* the pick), win, score difference, exact.
SOLVE_ROW = re.compile(r"^│ (\d+)( \*)? +│ (\S+) +│ (\S+) +│ (.+?) +│$")


@pytest.fixture(scope="module")
def lean_2x2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both objectives of the 2x2 board written lean, under names of their own."""
    from pipeline.games.knucklebones.game import KnuckleRules
    from tests.support.knucklebones_lean import write_lean_pair

    data = tmp_path_factory.mktemp("lean-2x2") / "data"
    write_lean_pair(data, "kb-lean", KnuckleRules(2, 2, 6))
    return data


def random_boards(name: str, n: int, rng: random.Random) -> list[tuple[str, int]]:
    """``n`` positions reached by random play on ``name``'s board (the game not over), each
    with a die."""
    rules = Answers(Path(".")).board_rules(get_variant(name))
    out: list[tuple[str, int]] = []
    while len(out) < n:
        here = rules.start()
        for _ in range(rng.randrange(0, rules.columns * rules.rows * 2 - 1)):
            after = rules.successors(here, rng.randrange(1, rules.faces + 1))
            nxt = after[rng.randrange(len(after))][1]
            if rules.over(nxt):
                break
            here = nxt
        out.append((rules.text(here), rng.randrange(1, rules.faces + 1)))
    return out


def solve_rows(stdout: str) -> dict[int, tuple[str, str, bool]]:
    """`knucklebones solve`'s table: column -> (win, score difference, picked)."""
    rows = {}
    for line in stdout.splitlines():
        m = SOLVE_ROW.match(line)
        if m:
            rows[int(m[1])] = (m[3], m[4], m[2] is not None)
    return rows


def printed(text: str, value: float | None, digits: int) -> bool:
    """Whether ``text`` is ``value`` as printed to ``digits`` decimals (``-``: None)."""
    if value is None:
        return text == "-"
    return abs(float(text) - value) <= 0.5 * 10.0**-digits + 1e-12


@pytest.mark.parametrize(
    ("name", "where", "depth"), BOARDS, ids=[f"{n}-{w}-{d}" for n, w, d in BOARDS]
)
def test_every_knucklebones_face_gives_one_answer(
    name: str, where: str, depth: int | None, built: Path, lean_2x2: Path
) -> None:
    """For random positions, `knucklebones solve`, ``pipeline.knucklebones_column``,
    ``pipeline.board`` and the server's JSON give the same columns, values (both objectives
    where both are built) and pick; a table-backed pick is the policy's column."""
    data = built if where == "built" else lean_2x2
    answers = Answers(data)
    variant = get_variant(name)
    client = TestClient(create_app(data, search_workers=1))
    rng = random.Random(f"{SEED}-{name}-{where}-{depth}")
    for text, die in random_boards(name, 3 if depth else DRAWS, rng):
        mover, opponent = text.split(";")
        found = answers.board(variant, text, die, depth)
        assert found.exact == (depth is None) and found.columns
        if depth is None:
            base = "kb-lean" if where == "lean" else name.removesuffix("-score")
            assert set(found.tables) == {base, f"{base}-score"}
            assert all(c.win is not None and c.diff is not None for c in found.columns)
        else:
            assert found.depth == depth and found.tables == ()
        picked = [c.column for c in found.columns if c.best]
        assert picked == [found.columns[0].column]
        # the API's two doors
        column = api.knucklebones_column(
            mover, opponent, die, depth=depth or 1, variant=name, data_dir=data
        )
        assert column == found
        assert api.board(name, text, die, depth=depth, data_dir=data) == found
        # the server's JSON
        params: dict[str, Any] = {"board": text, "die": die}
        if depth:
            params["depth"] = depth
        served = client.get(f"/{name}/position.json", params=params).json()
        assert {k: v for k, v in served.items() if k != "link"} == found.to_json()
        # the command line, as printed
        args = ["knucklebones", "solve", mover, opponent, str(die), "-v", name, "-d", data]
        shown = invoke([*args, "--depth", str(depth or 1)])
        assert shown.code == 0, shown.stderr
        rows = solve_rows(shown.stdout)
        assert sorted(rows) == sorted(c.column for c in found.columns), shown.stdout
        for c in found.columns:
            win, diff, star = rows[c.column]
            assert printed(win, c.win, 6) and printed(diff, c.diff, 4) and star == c.best
        if depth is None and where == "built":  # the tables' policy picks the same move
            state_id = variant.parse_state(found.board)
            policy = next(r for r in tables.policy(data, name, state_id) if r["roll"] == die)
            # the policy's columns are the canonical board's (its pairs in order)
            canonical = answers.board(variant, tables.state(data, name, state_id)["tiles"], die)
            assert [canonical.columns[0].column] == policy["best"]
            nxt = variant.parse_state
            assert nxt(found.columns[0].next) == nxt(canonical.columns[0].next)
