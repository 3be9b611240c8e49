"""The console script's lean door (`pipeline.cli.lean`) and the lookup it reads
(`pipeline.store.lookup`): a one-shot `expect` answers as the full command does, bit for bit,
from the values a build keeps beside each states file, and a lookup that is missing, stale or
damaged is never trusted (the full command answers instead)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tomllib
from contextlib import redirect_stderr, redirect_stdout
from importlib.machinery import PathFinder
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli import app, lean
from pipeline.games.registry import REGISTRY, select_one
from pipeline.store import lookup
from tests.conftest import BOX16, MORE, REPO

#: Positions asked of each variant (a sample of its states, and a few ids it does not have).
SAMPLE = 40
#: Of those, the ones also asked of the full command, output for output (each costs a read of
#: the tables, some 60 ms); the lookup's answer to every one is held to the table's value.
ASKED_OF_BOTH = 8


def both(argv: list[str]) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(code, stdout, stderr) of the lean door and of the full command, in this process."""
    found = []
    for run in (lean.run, app.run):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = run([str(a) for a in argv])
        found.append((code, out.getvalue(), err.getvalue()))
    return found[0], found[1]


def states_of(data: Path, name: str) -> dict[int, float | None]:
    """Every state id of ``name`` and its value, as the states file holds it."""
    own = data / "variants" / name / "states.parquet"
    if own.exists():
        table = pq.read_table(own, columns=["state_id", "value"])
    else:
        table = pq.read_table(data / "states.parquet", columns=["variant", "state_id", "value"])
        table = table.filter(pa.compute.equal(table["variant"], name))
    return dict(zip(table["state_id"].to_pylist(), table["value"].to_pylist(), strict=True))


def tiles_text(variant, state_id: int) -> str:
    return ",".join(str(t) for t in variant.codec.tiles(state_id))


def texts_of(game, state_id: int) -> list[list[str]]:
    """The ways a user writes ``state_id`` of a game read by its variant's ``parser`` (Double
    Shutter: its digits, and its rows of standing tiles; an N-player game: its open tiles and
    the seat, best score and tie count as options, in both forms; Knucklebones: its boards,
    the columns in canonical and in reversed order)."""
    if hasattr(game, "numbering"):  # Knucklebones
        pairs = game.positions[state_id]
        text, turned = game.board_text(pairs), game.board_text(pairs[::-1])
        return [[text], [turned.replace("_", "")]]
    if game.state_code(state_id) is not None:  # Double Shutter
        return [[game.state_code(state_id)], [game.state_text(state_id)]]
    fields = game.state_fields(state_id)
    text = game.state_text(state_id)
    options = {
        "--player": fields["player"],
        "--best-score": fields["best_score"],
        "--best-count": fields["best_count"],
    }
    given = [str(a) for key, value in options.items() if value is not None for a in (key, value)]
    out = [[text, *given]]
    if fields["player"] == 2:
        out.append([f"--best-score={fields['best_score']}", text, "--player=2"])
        if game.n == 2:
            out.append([text, "--p1-score", str(fields["best_score"])])
    return out


def check_variant(data: Path, name: str) -> int:
    """Ask ``name`` about a sample of positions through both doors: the same output each
    time, and every tile game's finite value answered by the lookup itself, bit for bit.
    The number answered by the lookup."""
    variant = select_one(name, None, {})
    held = states_of(data, name)
    rnd = random.Random(name)
    ids = rnd.sample(sorted(held), min(SAMPLE, len(held)))
    answered = 0
    if variant.codec is None and variant.parser is not None:
        return check_parsed(data, name, ids, held)
    if variant.codec is None:  # not the lean door's: the full command answers, as before
        for text in ("123", "000000000", "front=1234 back=6789", "4_/1_;_/3_"):
            argv = ["expect", "-v", name, text, "-d", data]
            assert lean.answer([str(a) for a in argv]) is None
            lean_out, full_out = both(argv)
            assert lean_out == full_out, argv
        return 0
    top = max(held)
    for k, state_id in enumerate([top + 1, (top + 1) * 2 - 1, *ids]):
        if state_id >= 1 << variant.codec.n_tiles:
            continue
        argv = ["expect", tiles_text(variant, state_id), "--variant", name, "-d", str(data)]
        found = lean.answer(argv)
        if k < 2 + ASKED_OF_BOTH:
            lean_out, full_out = both(argv)
            assert lean_out == full_out, argv
        value = held.get(state_id)
        if state_id and value is not None and value == value:  # (0: the shut box, refused)
            assert found is not None, argv
            assert struct.pack("<d", found) == struct.pack("<d", value), argv
            answered += 1
        else:
            assert found is None, argv
    return answered


#: Positions of no state, or not written as one, asked of a game read by its ``parser``
#: (HOSTILE-INPUTS: names and numbers): the full command says what is wrong.
NOT_POSITIONS = [
    "", " ", "0", "00000000", "0000000000", "000000003", "00000000\u0661", "\uff10" * 9,
    "0" * 10_000, "9" * 40, "front=1234", "front=1234 back=98", "front=1234 front=1234",
    "front=0 back=", "front=123456789 back=123456789 extra", "f=1,b=-", "front=- back=-",
    "front=12 back=99", "FRONT=123456789 BACK=123456789", "front=\u0661 back=-", "a,,b",
    "nan", "1,2,3", "4_/1_;_/3_",
    # Knucklebones' boards: a column too many or too few, a value on both sides of a pair,
    # digits not in ASCII, a column over full, faces too big or zero, ";" missing or doubled
    "4_/1_/_;_/3_/_", "4_;_/3_", "4_/1_;_", "4_/1_;4_/3_", "44/1_;_/4_", "\u0664_/1_;_/3_",
    "\uff14_/1_;_/3_", "444/1_;_/3_", "4_/1_;_/333", "7_/1_;_/3_", "0_/1_;_/3_", "4_/1_",
    "4_/1_;;_/3_", "4_/1_;_/3_;", ";", "/;/", " _ / _ ; _ / _ ", "4_/1_;_/3_ x", "4" * 10_000,
    "4_/1_;_/3\n_", "4_\n1_;_\n3_", "\x00",
]  # fmt: skip


#: Seats, best scores and tie counts of no position (HOSTILE-INPUTS: names and numbers).
NOT_SEATS = [
    ["--player", "0"], ["--player", "7"], ["--player", "2"], ["--player", "1", "--best-score", "3"],
    ["--player", "2", "--best-score", "0"], ["--player", "2", "--best-score", "9" * 40],
    ["--player", "2", "--best-score", "1000"], ["--player", "2", "--best-score", "\u0663"],
    ["--player", "2", "--best-score", "+3"], ["--player", "2", "--best-score", " 3"],
    ["--player", "2", "--best-score", "1_0"], ["--player", "2", "--best-score", "nan"],
    ["--player", "2", "--best-score", ""], ["--player", "2", "--best-score", "-3"],
    ["--player", "2", "--best-score", "3", "--best-count", "0"],
    ["--player", "2", "--best-score", "3", "--best-count", "2"],
    ["--player", "3", "--best-score", "3", "--best-count", "3"],
    ["--p1-score", "3", "--best-score", "4"], ["--p1-score", "0"], ["--p1-score", "3"],
    ["--player", "2", "--player", "2", "--best-score", "3"], ["--best-count", "1"],
    ["--player=2", "--best-score=3"], ["--player", "2", "--best-score"],
]  # fmt: skip


def check_parsed(data: Path, name: str, ids: list[int], held: dict[int, float | None]) -> int:
    """:func:`check_variant` of a game whose positions its ``parser`` reads: each sampled
    state written each way, and positions that are none."""
    game = select_one(name, None, {}).make()
    answered = 0
    for k, state_id in enumerate(ids):
        for written in texts_of(game, state_id):
            argv = ["expect", *written, "-v", name, "-d", str(data)]
            found = lean.answer(argv)
            if k < ASKED_OF_BOTH:
                lean_out, full_out = both(argv)
                assert lean_out == full_out, argv
            value = held[state_id]
            if value is not None and value == value:
                assert found is not None, argv
                assert struct.pack("<d", found) == struct.pack("<d", value), argv
                answered += 1
            else:
                assert found is None, argv
    asked = [["expect", "-v", name, text, "-d", str(data)] for text in NOT_POSITIONS] + [
        ["expect", "-v", name, "123", *options, "-d", str(data)] for options in NOT_SEATS
    ]
    if hasattr(game, "numbering"):  # a Knucklebones position given a two-player game's score
        text = texts_of(game, ids[0])[0][0]
        scores = [seat for seat in NOT_SEATS if "--p1-score" in seat]
        asked += [["expect", "-v", name, text, *seat, "-d", str(data)] for seat in scores]
    for argv in asked:
        lean_out, full_out = both(argv)
        assert lean_out == full_out, argv
        if full_out[0]:  # (" 3" and "+3" are numbers to click: the full command answers them)
            assert full_out[0] in (1, 2) and full_out[2].count("\n") == 1, (argv, full_out)
            assert lean.answer(argv) is None
    return answered


def test_every_variant_of_all(built: Path) -> None:
    names = sorted(v.name for v in REGISTRY.values() if v.in_all)
    answered = {name: check_variant(built, name) for name in names}
    assert answered["classic"] > 0 and answered["twelve-tiles"] > 0
    assert answered["double-shutter"] > 0 and answered["double-shutter-zero"] > 0
    assert answered["knucklebones-2x2"] > 0 and answered["knucklebones-2x2-score"] > 0
    assert {n for n, k in answered.items() if k} == {
        n for n in names if REGISTRY[n].codec is not None or REGISTRY[n].parser is not None
    }


@pytest.mark.parametrize("options", [["--player", "2"], ["--best-score=3"], ["--best-count", "1"]])
def test_a_seat_given_with_a_board_is_refused(built: Path, options: list[str]) -> None:
    """A Knucklebones position takes no seat or best score (the N-player games' parts): refused
    in one line, as a one-player box refuses them, not ignored."""
    argv = ["expect", "-v", "knucklebones-2x2", "4_/1_;_/3_", *options, "-d", str(built)]
    assert lean.answer(argv) is None
    lean_out, full_out = both(argv)
    assert lean_out == full_out
    code, out, err = full_out
    assert code == 2 and not out and err.count("\n") == 1
    assert err.startswith("error: ") and "applies only to the N-player games" in err


def test_variants_stored_on_their_own(built_more: Path) -> None:
    """A rules-named box streamed into files of its own, and the N-player games beside it."""
    assert check_variant(built_more, BOX16) > 0
    for name in MORE:
        assert check_variant(built_more, name) > 0
    for name in (BOX16, *MORE[1:]):
        assert (built_more / "variants" / name / lookup.NAME).is_file()


def test_a_build_writes_the_lookup(built: Path) -> None:
    head = (built / lookup.NAME).read_bytes()
    assert head.startswith(lookup.MAGIC)
    assert lookup.value(str(built.resolve()), "classic", 0b111111111) is not None


#: Bad input and every other command line the door leaves to the full command (HOSTILE-INPUTS:
#: names and numbers, paths given to read); "D" stands for the built data directory.
BAD = [
    ["expect"],
    ["expect", "-h"],
    ["expect", "--help"],
    ["expect", "123", "--help", "-d", "D"],
    ["--help"],
    [],
    ["--version"],
    ["expect", "", "-d", "D"],
    ["expect", "  ", "-d", "D"],
    ["expect", ",", "-d", "D"],
    ["expect", "1,,2", "-d", "D"],
    ["expect", "0", "-d", "D"],
    ["expect", "10", "-d", "D"],
    ["expect", "11", "-d", "D"],
    ["expect", "-1", "-d", "D"],
    ["expect", "\u0661\u0662\u0663", "-d", "D"],
    ["expect", "\uff11\uff12", "-d", "D"],
    ["expect", "1" * 10_000, "-d", "D"],
    ["expect", "9" * 40, "-d", "D"],
    ["expect", "123", "456", "-d", "D"],
    ["expect", "123", "--", "-d", "D"],
    ["expect", "--", "123", "-d", "D"],
    ["expect", "123", "-v", "", "-d", "D"],
    ["expect", "123", "-v", " ", "-d", "D"],
    ["expect", "123", "-v", "all", "-d", "D"],
    ["expect", "123", "-v", "custom", "-d", "D"],
    ["expect", "123", "-v", "CLASSIC", "-d", "D"],
    ["expect", "123", "-v", "clasic", "-d", "D"],
    ["expect", "123", "-v", "classic,lever", "-d", "D"],
    ["expect", "123", "-v", "x" * 10_000, "-d", "D"],
    ["expect", "123", "-v", "lever", "-v", "classic", "-d", "D"],
    ["expect", "123", "--variant=lever", "-d", "D"],
    ["expect", "123", "--variant=", "-d", "D"],
    ["expect", "123", "-vlever", "-d", "D"],
    ["expect", "123", "-v"],
    ["expect", "123", "-d"],
    ["expect", "123", "-d", ""],
    ["expect", "123", "-d", "  "],
    ["expect", "123", "--data-dir="],
    ["expect", "123", "-d", "/dev/null"],
    ["expect", "123", "-d", "/proc/self/status"],
    ["expect", "123", "-d", "a" * 300],
    ["expect", "123", "-d", "D/missing"],
    ["expect", "123", "-d", "D", "-d", "D"],
    ["expect", "123", "--player", "2", "-d", "D"],
    ["expect", "123", "--p1-score", "-1", "-d", "D"],
    ["expect", "123", "--best-score", "nan", "-d", "D"],
    ["expect", "123", "--tiles", "12", "-d", "D"],
    ["expect", "123", "--tiles", "9", "--dice", "2", "-d", "D"],
    ["expect", "123", "--nope", "-d", "D"],
    ["expect", "123", "-v", "two-player", "-d", "D"],
    ["expect", "12", "-v", "six-tiles-one-die", "-d", "D"],
    ["expect", "123456789", "-v", "six-tiles-one-die", "-d", "D"],
    ["expect", "1,2,10", "-v", "twelve-tiles", "-d", "D"],
    ["expect", "11,12", "-v", "twelve-tiles", "-d", "D"],
    ["expect", "1112", "-v", "twelve-tiles", "-d", "D"],
    ["expect", "123", "-v", "stb-12t-3d6-shut", "-d", "D"],
    ["expect", "123", "-v", "stb-99t-3d6-shut", "-d", "D"],
    ["move", "12345", "7", "-d", "D"],
    ["Expect", "123", "-d", "D"],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda a: " ".join(a)[:60] or "(none)")
def test_bad_input_and_other_commands_as_before(argv: list[str], built: Path) -> None:
    """Every line the door does not answer is the full command's, word for word."""
    argv = [a.replace("D", str(built)) if a.startswith("D") else a for a in argv]
    lean_out, full_out = both(argv)
    assert lean_out == full_out
    if argv[:1] == ["expect"] and not {"-h", "--help"} & set(argv) and full_out[0]:
        assert full_out[0] in (1, 2) and full_out[2].count("\n") == 1, full_out


def test_parse_reads_only_the_simple_forms() -> None:
    assert lean.parse(["expect", "123"]) == (None, None, "123", {})
    assert lean.parse(["expect", "-d", "x", "123", "-v", "lever"]) == ("lever", "x", "123", {})
    assert lean.parse(["expect", "--data-dir=x", "--variant", "a", "1"]) == ("a", "x", "1", {})
    assert lean.parse(["expect", "1", "--player", "3", "--best-score=07"]) == (
        None, None, "1", {"player": 3, "best_score": 7},
    )  # fmt: skip
    for argv in (
        ["move", "123", "7"],
        ["expect"],
        ["expect", "1", "2"],
        ["expect", "1", "-v", "a", "-v", "a"],
        ["expect", "1", "-v", "-d"],
        ["expect", "1", "-h"],
        ["expect", "1", "--player", "+2"],
        ["expect", "1", "--player", "\u0662"],
        ["expect", "1", "--player", "2", "--player", "2"],
        ["expect", "1", "--p1-score"],
        ["expect", "1", "-vlever"],
        ["expect", "1", "--"],
    ):
        assert lean.parse(argv) is None, argv


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    """A copy of `built` to damage."""
    data = tmp_path / "data"
    shutil.copytree(built, data)
    return data


CLASSIC = ["expect", "123456789", "-v", "classic"]


def untrusted(data: Path) -> None:
    """The lookup of ``data`` is not used, and the full command answers as it would."""
    argv = [*CLASSIC, "-d", str(data)]
    assert lean.answer(argv) is None
    lean_out, full_out = both(argv)
    assert lean_out == full_out


def section(data: Path, name: str) -> tuple[int, int]:
    """Where the values of ``name``'s section of the shared lookup start (after its table of
    blocks), and their length."""
    with open(data / lookup.NAME, "rb") as fh:
        head = lookup._header(fh)
    assert head is not None
    found = head["variants"][name]
    blocks = -(-found["bytes"] // lookup.BLOCK)
    return head["body"] + found["offset"] + 32 * blocks, found["bytes"]


def flip(path: Path, at: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x40
    path.write_bytes(bytes(raw))


def test_a_damaged_section_is_not_trusted(copy: Path) -> None:
    start, size = section(copy, "classic")
    assert size == 8 * 512  # dense: state id k at byte 8k
    flip(copy / lookup.NAME, start + 8 * 0b111111111)  # the start state's value itself
    untrusted(copy)
    # another variant's section is still good
    argv = ["expect", "123456", "-v", "lever", "-d", str(copy)]
    assert lean.answer(argv) is not None


def test_a_damaged_table_of_blocks_is_not_trusted(copy: Path) -> None:
    start, _ = section(copy, "classic")
    flip(copy / lookup.NAME, start - 7)  # the last block's sha256 in the section's table
    untrusted(copy)


def test_an_answer_checks_the_block_it_reads(copy: Path) -> None:
    """Each block is checked on its own: a damaged one refuses the states it holds, and the
    others still answer (an answer reads one block, not the section)."""
    name = "knucklebones-2x2"
    start, size = section(copy, name)
    assert size > 4 * lookup.BLOCK  # dense, from state id `low`
    held = states_of(copy, name)
    with open(copy / lookup.NAME, "rb") as fh:
        low = lookup._header(fh)["variants"][name]["low"]  # type: ignore[index]
    per_block = lookup.BLOCK // 8
    damaged = low + 2 * per_block + 5
    flip(copy / lookup.NAME, start + 8 * (damaged - low))
    data = str(copy.resolve())
    assert lookup.value(data, name, damaged) is None
    assert lookup.value(data, name, damaged + per_block // 2) is None  # the same block
    for state_id in (low + 1, low + 3 * per_block, damaged - per_block):
        if held.get(state_id) is not None:
            assert lookup.value(data, name, state_id) == held[state_id]


@pytest.mark.parametrize("claim", [{"bytes": 1 << 50}, {"bytes": -8}, {"offset": 1 << 40}])
def test_a_header_that_lies_is_not_read_past_the_file(copy: Path, claim: dict[str, int]) -> None:
    """A header rewritten with a sound sha256 but a section that is not in the file: refused
    before anything that size is read."""
    path = copy / lookup.NAME
    whole = path.read_bytes()
    with open(path, "rb") as fh:
        head = lookup._header(fh)
    assert head is not None
    body = head.pop("body")
    head["variants"]["classic"].update(claim)
    raw = json.dumps(head).encode()
    digest = hashlib.sha256(raw).digest()
    path.write_bytes(lookup.MAGIC + struct.pack("<I", len(raw)) + raw + digest + whole[body:])
    untrusted(copy)


def no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A states file can no longer be hashed: trusted only by its recorded stamp."""

    def refuse(*_a: object, **_k: object) -> None:
        raise OSError("hashed")

    monkeypatch.setattr(lookup.hashlib, "file_digest", refuse)


def test_a_states_file_untouched_is_trusted_without_hashing(
    built: Path, copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file the lookup was made from (the same inode, times and size) is not hashed; a
    copy of it (another inode) is, and answers only where its sha256 holds."""
    argv = [*CLASSIC, "-d", str(built)]
    expected = lean.answer([*CLASSIC, "-d", str(copy)])  # (hashed: the copy's own inode)
    assert expected is not None
    no_hashing(monkeypatch)
    assert lean.answer(argv) == expected
    assert lean.answer([*CLASSIC, "-d", str(copy)]) is None


def test_a_states_file_rewritten_with_its_old_times_is_hashed(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A states file written again in place with its modification time set back keeps its
    inode and size, but not its change time: the lookup then holds only by its sha256, and not
    at all where the file is too big to hash, or where the lookup is older than the file."""
    states = copy / "states.parquet"
    assert lookup.write(states, shared=True)  # stamped with the copy's own file
    argv = [*CLASSIC, "-d", str(copy)]
    expected = lean.answer(argv)
    assert expected is not None
    before = os.stat(states)
    states.write_bytes(states.read_bytes())  # the same bytes, a new change time
    os.utime(states, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(states).st_ctime_ns != before.st_ctime_ns
    assert lean.answer(argv) == expected  # hashed: the very bytes
    monkeypatch.setattr(lookup, "MAX_HASH_BYTES", 0)
    untrusted(copy)
    monkeypatch.undo()
    assert lookup.write(states, shared=True)
    assert lean.answer(argv) == expected
    made = os.stat(copy / lookup.NAME)
    os.utime(copy / lookup.NAME, ns=(made.st_atime_ns, os.stat(states).st_ctime_ns))
    no_hashing(monkeypatch)  # a lookup no newer than its file: the same tick, maybe not after
    untrusted(copy)


def test_a_big_states_file_is_trusted_by_its_stamp(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A states file over MAX_HASH_BYTES is not hashed when its lookup is written, and its
    lookup answers only while the file is untouched."""
    monkeypatch.setattr(lookup, "MAX_HASH_BYTES", 0)
    states = copy / "states.parquet"
    assert lookup.write(states, shared=True)
    with open(copy / lookup.NAME, "rb") as fh:
        assert lookup._header(fh)["sha256"] == ""  # type: ignore[index]
    argv = [*CLASSIC, "-d", str(copy)]
    assert lean.answer(argv) is not None
    os.utime(states)  # touched
    untrusted(copy)


def test_values_over_the_limit_get_no_lookup(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookup, "MAX_BODY_BYTES", 4096)
    assert not lookup.write(copy / "states.parquet", shared=True)
    assert not (copy / lookup.NAME).exists()
    untrusted(copy)


def toy(data: Path, ids: list[int], objective: list[str | None]) -> dict[int, float]:
    """A variant ``toy`` stored on its own in ``data``, its values by state id."""
    folder = data / "variants" / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    values = [math.sqrt(i + 0.5) / 7 for i in ids]
    types = {"state_id": pa.int64(), "value": pa.float64(), "objective": pa.string()}
    columns = {"state_id": ids, "value": values, "objective": objective}
    pq.write_table(
        pa.table({k: pa.array(v, types[k]) for k, v in columns.items()}),
        folder / "states.parquet",
        row_group_size=16,
    )
    return dict(zip(ids, values, strict=True))


@pytest.mark.parametrize("spread", [1, 1000])
def test_a_lookup_is_written_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spread: int
) -> None:
    """Ids in any order, read a few rows at a time, kept densely (``spread`` 1) or sparsely:
    every value read back bit for bit; ids not there have none."""
    monkeypatch.setattr(lookup, "BATCH_ROWS", 7)
    ids = [100 + spread * k for k in range(60)]
    random.Random(spread).shuffle(ids)
    held = toy(tmp_path, ids, ["wins"] * len(ids))
    assert lookup.write(tmp_path / "variants" / "toy" / "states.parquet", shared=False)
    with open(tmp_path / "variants" / "toy" / lookup.NAME, "rb") as fh:
        assert lookup._header(fh)["variants"]["toy"]["dense"] is (spread == 1)  # type: ignore[index]
    data = str(tmp_path.resolve())
    for state_id, value in held.items():
        assert struct.pack("<d", lookup.value(data, "toy", state_id)) == struct.pack("<d", value)  # type: ignore[arg-type]
    for state_id in (99, 101 if spread > 1 else 160, 100 + spread * 60):
        assert lookup.value(data, "toy", state_id) is None


def test_values_planned_over_the_limit_are_not_gathered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 rows fit 480 bytes, but their ids span 120 (dense: 960 bytes): no lookup, decided
    from the ids' range before any values are gathered (the full game's would be 38 GB)."""
    states = tmp_path / "variants" / "toy" / "states.parquet"
    toy(tmp_path, [100 + 2 * k for k in range(60)], ["wins"] * 60)
    monkeypatch.setattr(lookup, "MAX_BODY_BYTES", 8 * 60)
    assert not lookup.write(states, shared=False)
    assert not (states.parent / lookup.NAME).exists()
    monkeypatch.undo()
    monkeypatch.setattr(lookup, "MAX_BODY_BYTES", 8 * 120)
    assert lookup.write(states, shared=False)


def test_an_empty_states_file_gets_an_empty_lookup(tmp_path: Path) -> None:
    states = tmp_path / "variants" / "toy" / "states.parquet"
    toy(tmp_path, [], [])
    assert lookup.write(states, shared=False)
    with open(states.parent / lookup.NAME, "rb") as fh:
        assert lookup._header(fh)["variants"] == {}  # type: ignore[index]
    assert lookup.value(str(tmp_path.resolve()), "toy", 0) is None


@pytest.mark.parametrize("spread", [1, 1000])
def test_a_state_twice_or_without_an_objective_gets_no_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spread: int
) -> None:
    monkeypatch.setattr(lookup, "BATCH_ROWS", 7)
    states = tmp_path / "variants" / "toy" / "states.parquet"
    ids = [100 + spread * k for k in range(30)]
    toy(tmp_path, [*ids, ids[17]], ["wins"] * 31)  # state 17 twice, far apart
    assert lookup.write(states, shared=False)
    with open(states.parent / lookup.NAME, "rb") as fh:
        assert lookup._header(fh)["variants"] == {}  # type: ignore[index]
    toy(tmp_path, ids, ["wins"] * 20 + [None] + ["wins"] * 9)
    assert lookup.write(states, shared=False)
    assert lookup.value(str(tmp_path.resolve()), "toy", ids[0]) is None


@pytest.mark.parametrize("where", ["magic", "length", "header", "digest"])
def test_a_damaged_header_is_not_trusted(copy: Path, where: str) -> None:
    with open(copy / lookup.NAME, "rb") as fh:
        head = lookup._header(fh)
    assert head is not None
    at = {
        "magic": 0,
        "length": len(lookup.MAGIC),
        "header": len(lookup.MAGIC) + 20,
        "digest": head["body"] - 5,  # the header's sha256 ends where the sections begin
    }[where]
    flip(copy / lookup.NAME, at)
    untrusted(copy)


def test_a_truncated_or_foreign_lookup_is_not_trusted(copy: Path, built_more: Path) -> None:
    path = copy / lookup.NAME
    whole = path.read_bytes()
    start, _ = section(copy, "classic")
    for cut in (0, 5, len(lookup.MAGIC) + 4, 200, start + 100):
        path.write_bytes(whole[:cut])
        untrusted(copy)
    path.write_bytes(os.urandom(4096))
    untrusted(copy)
    shutil.copy(built_more / lookup.NAME, path)  # a lookup of another states file
    untrusted(copy)
    path.unlink()
    untrusted(copy)
    path.mkdir()
    untrusted(copy)
    path.rmdir()
    os.mkfifo(path)  # never opened for a blocking read
    untrusted(copy)


def test_a_changed_states_file_is_not_trusted(copy: Path) -> None:
    """The states file rewritten behind the lookup's back, one value changed by one ulp: the
    lookup (made from the old file) is never used, and the answer is the new file's."""
    states = copy / "states.parquet"
    table = pq.read_table(states)
    values = table["value"].to_pylist()
    names, ids = table["variant"].to_pylist(), table["state_id"].to_pylist()
    k = next(
        i for i, (n, s) in enumerate(zip(names, ids, strict=True)) if (n, s) == ("classic", 511)
    )
    old = values[k]
    values[k] = math.nextafter(old, math.inf)
    column = table.schema.get_field_index("value")
    changed = table.set_column(column, table.schema.field(column), pa.array(values, pa.float64()))
    pq.write_table(changed, states, compression="zstd")
    untrusted(copy)
    lean_out, _ = both([*CLASSIC, "-d", str(copy)])
    assert lean_out[1] == f"{values[k]!r}\n" != f"{old!r}\n"


def test_a_pending_commit_or_a_temporary_file_leaves_it_to_the_full_command(copy: Path) -> None:
    argv = [*CLASSIC, "-d", str(copy)]
    assert lean.answer(argv) is not None
    stray = copy / ".states.parquet.999999999.tmp"  # a writer that is gone: the full path sweeps
    stray.write_bytes(b"x")
    untrusted(copy)
    assert not stray.exists()
    own = copy / "variants" / "x"
    own.mkdir(parents=True)
    (own / ".states.parquet.999999999.tmp").write_bytes(b"x")
    assert lean.answer(argv) is None
    shutil.rmtree(copy / "variants")
    assert lean.answer(argv) is not None


def test_a_lookup_without_a_finite_value_is_not_used(copy: Path) -> None:
    """A lookup written for a file whose value is NaN: the full command answers (whatever it
    says), never the lookup."""
    states = copy / "states.parquet"
    table = pq.read_table(states)
    values = [
        math.nan if (n, s) == ("classic", 511) else v
        for n, s, v in zip(
            table["variant"].to_pylist(), table["state_id"].to_pylist(),
            table["value"].to_pylist(), strict=True,
        )
    ]  # fmt: skip
    column = table.schema.get_field_index("value")
    pq.write_table(
        table.set_column(column, table.schema.field(column), pa.array(values, pa.float64())),
        states,
    )
    assert lookup.write(states, shared=True)
    untrusted(copy)


def run_script(argv: list[str], cwd: Path, stdout: int | None = subprocess.PIPE, **kw):
    env = {**os.environ, "PYTHONPATH": str(REPO), "STB_QUIET": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *argv],
        cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, check=False, **kw,
    )  # fmt: skip


#: One position of each kind of game the door answers: (fixture, variant, position and its
#: options, words separated by two spaces).
EVERY_KIND = [
    ("built", "classic", "123456789"),
    ("built", "twelve-tiles", "1,2,10,12"),
    ("built", "double-shutter", "front=1234 back=6789"),
    ("built", "double-shutter-zero", "000000000"),
    ("built_more", BOX16, "1,2,3,16"),  # a box named by its rules
    ("built", "two-player", "12345  --p1-score  7"),
    ("built_more", "four-player", "134  --player  3  --best-score  11  --best-count  1"),
    ("built_more", "two-player-stake", "12345"),
    ("built", "knucklebones-2x2", "4_/1_;_/3_"),
    ("built", "knucklebones-2x2-score", "44/_;_/13"),
]


@pytest.mark.parametrize(("where", "name", "position"), EVERY_KIND)
def test_the_door_loads_no_heavy_library(
    where: str, name: str, position: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The door answers each kind of game without numpy, DuckDB, pyarrow, polars, typer, rich
    or click, nor importlib.metadata's scan of the installed packages, and says what the full
    command says."""
    data = request.getfixturevalue(where)
    argv = ["expect", "-v", name, "-d", str(data), *position.split("  ")]
    code = (
        "import sys\nfrom pipeline.cli.lean import run\n"
        f"assert run({argv!r}) == 0\n"
        "heavy = {'numpy', 'duckdb', '_duckdb', 'pyarrow', 'polars', 'typer', 'rich', 'click'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "             or m == 'importlib.metadata'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == "[]"
    value = found.stdout.splitlines()[0]
    assert value == run_script(argv, tmp_path).stdout.strip()
    assert lean.answer(argv) is not None


def entry_points_file(site: Path, folder: str, text: str | bytes) -> None:
    (site / folder).mkdir(parents=True)
    path = site / folder / "entry_points.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def test_the_plugin_scan_is_skipped_only_where_it_finds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A box named by its rules is looked up after the installed families (a plugin might add
    a name reader); their scan is skipped only where no entry points file could declare one or
    fail to parse (HOSTILE-INPUTS: plugins)."""
    from pipeline.games import registry

    site = tmp_path / "site"
    site.mkdir()
    # only the standard library's finders (a package imported earlier in this process, such as
    # the importlib_metadata backport, may have added its own, which makes the scan run) and
    # only this folder on the path: what the check reads is this test's alone
    stdlib = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is None]
    monkeypatch.setattr(sys, "meta_path", [*stdlib, PathFinder])
    monkeypatch.setattr(sys, "path", [str(site)])
    assert not registry._may_declare_plugins()
    entry_points_file(site, "other-1.0.dist-info", "[console_scripts]\nx = y:z\n# note\n")
    assert not registry._may_declare_plugins()
    for folder, text in [
        ("plug-1.0.dist-info", f"[{registry.ENTRY_POINTS}]\nmine = plug\n"),
        ("plug-1.0.egg-info", f"  [ {registry.ENTRY_POINTS} ]  \nmine = plug\n"),
        ("bad-1.0.dist-info", "[console_scripts]\nno equals sign\n"),  # the scan would raise
        ("bad-1.0.dist-info", b"[console_scripts]\nx = \xff\n"),  # not UTF-8: it would raise
        ("-1.0.dist-info", ""),  # named from its metadata by the scan
        ("Caps-1.0.DIST-INFO", ""),
    ]:
        entry_points_file(site, folder, text)
        assert registry._may_declare_plugins(), folder
        shutil.rmtree(site / folder)
    assert not registry._may_declare_plugins()
    finder = type("OtherFinder", (), {"find_distributions": lambda self, context=None: []})()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    assert registry._may_declare_plugins()  # a finder it does not read alike: the scan runs
    monkeypatch.setattr(sys, "meta_path", [*stdlib, PathFinder])
    egg = tmp_path / "x.egg"
    egg.mkdir()
    monkeypatch.setattr(sys, "path", [str(egg), *sys.path])
    assert registry._may_declare_plugins()


def test_the_console_script_is_the_door() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["stb-pipeline"] == "pipeline.cli.lean:main"
    assert "pipeline.cli.lean import main" in (REPO / "pipeline" / "__main__.py").read_text()


def test_a_full_disk_is_one_line_as_before(built: Path, tmp_path: Path) -> None:
    """Standard output that cannot be written: one line and exit 1, as the full command says."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    argv = ["expect", "123456789", "-d", str(built)]
    with open("/dev/full", "w") as full:
        found = run_script(argv, tmp_path, stdout=full.fileno())
    assert found.returncode == 1
    assert found.stderr.splitlines() == [
        "error: cannot write to standard output: No space left on device"
    ]
