"""The index behind every answer: a variant's values read once, held within a memory budget
(least recently used dropped), read again when its file changes, read a row group at a time
when too big to hold (a file sorted by state id, as the full Knucklebones game's lean tables),
refused when it can be neither; and answers that need no ``policy`` or ``moves`` file where
the rules value every roll."""

from __future__ import annotations

import json
import random
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.answer.answers import Answers
from pipeline.errors import PipelineError, UsageError
from pipeline.games.registry import get_variant
from pipeline.store import footers
from pipeline.store.states import HeldStates, PagedStates, PointStates
from tests.conftest import BOX16, invoke
from tests.support import tables

MB = 1024 * 1024


def test_a_variant_is_read_once_then_answered_from_memory(built: Path) -> None:
    answers = Answers(built)
    classic = get_variant("classic")
    first = answers.position(classic, "12345", roll=7)
    assert answers.index.reads == 1 and answers.index.in_memory("classic")
    for tiles in ("123", "1789", "456", "12345"):
        answers.position(classic, tiles, roll=7)
    assert answers.index.reads == 1  # no file read for the later answers
    assert answers.position(classic, "12345", roll=7) == first
    assert answers.index.held() == ["classic"] and answers.index.nbytes == 512 * 11


def test_memory_stays_within_the_budget(built: Path) -> None:
    """Each answer keeps the held arrays within ``cache_mb``, dropping the least recently used
    variants first; a dropped variant is read again when asked, with the same answers."""
    names = ["twelve-tiles", "two-player", "double-shutter", "classic", "twelve-tiles"]
    size = {}
    for name in set(names):  # each variant's arrays, read alone
        alone = Answers(built)
        alone.position(get_variant(name), state_id=get_variant(name).make().start_state())
        size[name] = alone.index.nbytes
    budget = size["two-player"] + size["double-shutter"] + size["classic"]
    answers = Answers(built, cache_mb=budget / MB)
    held: list[str] = []  # what the budget lets stay, least recently used first
    seen = {}
    for name in names:
        variant = get_variant(name)
        found = answers.position(variant, state_id=variant.make().start_state())
        assert seen.setdefault(name, found) == found
        held = [n for n in held if n != name] + [name]
        while sum(size[n] for n in held) > budget:
            held.pop(0)
        assert answers.index.held() == held
        assert answers.index.nbytes <= budget
    assert held == ["double-shutter", "classic", "twelve-tiles"]  # two-player went first
    assert answers.index.reads == len(names)  # twelve-tiles twice: it had been dropped


def test_a_changed_table_is_read_again(tmp_path: Path) -> None:
    """Rebuilding a variant (its file replaced, its sha256 in the manifest changed) makes the
    next answer read it again: the answer is the new tables'."""
    build = ["build", "--tiles", "5", "--name", "five", "-d", tmp_path]
    assert invoke(build).code == 0
    answers = Answers(tmp_path)
    variant = answers.variant("five")  # built under its own name: the data directory says
    before = answers.position(variant, "12345", roll=5)
    assert invoke([*build, "--objective", "score", "--force"]).code == 0
    variant = answers.variant("five")
    assert variant.make().rules()["objective"] == "score"
    after = answers.position(variant, "12345", roll=5)
    assert answers.index.reads == 2
    assert before.state.objective == "shut" and after.state.objective == "score"
    tables.check_position(after.to_json(), tmp_path, "five")
    # a stuck roll is worth the new rules' final value too (the score of the open tiles)
    stuck = next(r for r in answers.position(variant, "15").rolls if r.kind == "end")
    assert stuck.value == 6.0


def lean_copy(built: Path, target: Path, name: str, rows_per_group: int, shuffle: bool) -> None:
    """``name``'s states as the full game's lean table is written: its own file, the columns
    state_id, value, variant, objective, maximise, sorted by state id in row groups of
    ``rows_per_group`` ids with statistics (``shuffle``: the rows out of order instead)."""
    found = tables.rows(built, "states", name, "true order by state_id")
    cols = {k: [r[k] for r in found] for k in ("state_id", "value", "objective", "maximise")}
    table = pa.table({"variant": [name] * len(found), **cols})
    if shuffle:
        table = table.take(np.random.default_rng(0).permutation(table.num_rows))
    rules = json.loads(pq.read_schema(built / "states.parquet").metadata[b"stb.rules"])
    table = table.replace_schema_metadata({"stb.rules": json.dumps({name: rules[name]})})
    own = target / "variants" / name
    own.mkdir(parents=True)
    pq.write_table(table, own / "states.parquet", row_group_size=rows_per_group)


def test_a_big_variant_is_read_a_row_group_at_a_time(built: Path, tmp_path: Path) -> None:
    """A variant too big for the budget whose file is sorted by state id (the full game's lean
    table, here knucklebones-2x2's written so) is read a row group at a time: each answer reads
    the row groups of the position and its successors, and the answers are the whole table's."""
    name = "knucklebones-2x2"
    for objective in (name, f"{name}-score"):  # a board's answer reads both objectives
        lean_copy(built, tmp_path, objective, 8192, shuffle=False)
    paged = Answers(tmp_path, cache_mb=0.5)  # the whole variant: 127,765 values, 1.3 MB
    whole = Answers(built)
    variant = get_variant(name)
    assert isinstance(paged.index.states(name), PagedStates)
    rng = random.Random(7)
    for _ in range(20):
        row = tables.state(built, name, rng.randrange(127765))
        die = rng.randrange(1, 7)
        found = paged.board(variant, row["tiles"], die)
        assert found == whole.board(variant, row["tiles"], die)
        assert found.tables == (name, f"{name}-score")
        assert paged.index.nbytes <= 0.5 * MB
    assert paged.index.reads > 2  # several row groups read, some dropped again


def test_too_big_and_not_sorted_is_refused(built: Path, tmp_path: Path) -> None:
    """A variant bigger than the budget whose file is not sorted by state id cannot be read in
    parts: refused with the memory it needs and the option that gives it."""
    name = "knucklebones-2x2"
    lean_copy(built, tmp_path, name, 8192, shuffle=True)
    answers = Answers(tmp_path, cache_mb=0.5)
    with pytest.raises(UsageError, match=r"needs 1 MB .*raise --cache-mb to 1\)"):
        answers.board(get_variant(name), "4_/1_;_/3_", 4)
    assert isinstance(Answers(tmp_path, cache_mb=1).index.states(name), HeldStates)


@pytest.mark.parametrize("name", ["classic", "double-shutter", "lever"])
def test_answers_need_only_the_states_file(built: Path, tmp_path: Path, name: str) -> None:
    """Where the rules value every roll (the one-player games), an answer reads the states
    file alone: without the policy and moves files the answers are the same."""
    shutil.copy(built / "states.parquet", tmp_path / "states.parquet")
    alone, full = Answers(tmp_path), Answers(built)
    variant = get_variant(name)
    ids = full.arrays(variant)["state_id"].tolist()
    rng = random.Random(name)
    for state_id in rng.sample(ids, 10):
        found = full.position(variant, state_id=state_id)
        for r in found.rolls[:3]:
            assert alone.position(variant, state_id=state_id, roll=r.roll) == full.position(
                variant, state_id=state_id, roll=r.roll
            )


def test_answers_from_several_threads(built: Path) -> None:
    """The server answers from worker threads: one index, the same answers as one thread."""
    answers = Answers(built)
    variants = [get_variant(n) for n in ("classic", "two-player", "double-shutter", "lever")]
    asked = [(v, s) for v in variants for s in range(1, 60)]
    one = Answers(built)  # the same answers from one thread
    alone = {(v.name, s): _safe(one, v, s) for v, s in asked}
    found: dict = {}

    def work(part: list) -> None:
        for v, s in part:
            found[(v.name, s)] = _safe(answers, v, s)

    threads = [threading.Thread(target=work, args=(asked[k::6],)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == alone and answers.index.reads == len(variants)  # each file read once


def _safe(answers: Answers, variant, state_id: int):
    """The answer, or the error's message for an id that is no state."""
    try:
        return answers.position(variant, state_id=state_id)
    except UsageError as exc:
        return str(exc)


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("classic", "built"),
        ("two-player", "built"),
        ("double-shutter", "built"),
        ("lever", "built"),
        ("four-player", "built_more"),
        ("two-player-stake", "built_more"),
        (BOX16, "built_more"),
    ],
)
def test_one_shot_answers_read_states_by_id_with_the_same_answers(
    name: str, where: str, request: pytest.FixtureRequest
) -> None:
    """`expect` and `move` answer once: their answers read the state and its successors by
    id (no arrays of the whole variant), and are the held arrays' to the last bit, every roll
    and its ranked moves, stuck rolls and the positions that are no state included."""
    data = request.getfixturevalue(where)
    variant = get_variant(name)
    held = Answers(data)
    ids = held.arrays(variant)["state_id"].tolist()
    for state_id in [*random.Random(name).sample(ids, 12), variant.make().start_state()]:
        once = Answers(data, points=True)  # a fresh one, as each command makes
        found = held.position(variant, state_id=state_id)
        assert once.position(variant, state_id=state_id) == found
        assert once.expect(variant, state_id=state_id) == found.state
        states = once.index.states(name)
        assert isinstance(states, PointStates) and states.nbytes == 0
        assert len(states.known) < 200  # the state and where its moves lead, not the variant
        for r in found.rolls[:4]:
            assert once.position(variant, state_id=state_id, roll=r.roll) == held.position(
                variant, state_id=state_id, roll=r.roll
            )
    missing = max(ids) + 1
    with pytest.raises(UsageError) as alone:
        Answers(data, points=True).position(variant, state_id=missing)
    with pytest.raises(UsageError) as whole:
        held.position(variant, state_id=missing)
    assert str(alone.value) == str(whole.value)


def test_one_shot_answers_of_a_variant_not_built(built: Path) -> None:
    """A variant the directory lacks is the same one-line error as from the held arrays."""
    variant = get_variant("stb-11t-2d6-shut")  # a box `build --variant all` does not make
    errors = []
    for points in (False, True):
        with pytest.raises(PipelineError) as caught:
            Answers(built, points=points).expect(variant, "1,2,3")
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1] and "stb-pipeline build" in errors[0][1]


def test_duckdb_and_pyarrow_read_every_footer_alike(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A footer is parsed by DuckDB (small ones, where DuckDB is installed: a reader then never
    loads pyarrow) or by pyarrow (large ones, or without DuckDB): the same columns, metadata,
    row groups, statistics and rules for every table file of a build, a lean sorted copy and a
    file with row groups without statistics included."""
    lean_copy(built, tmp_path, "knucklebones-2x2", 64, shuffle=False)
    bare = tmp_path / "bare.parquet"
    pq.write_table(pa.table({"state_id": [3, 1, 2], "value": [0.5, None, 1.0]}), bare,
                   row_group_size=2, write_statistics=False)  # fmt: skip
    files = [*sorted(built.rglob("*.parquet")), *sorted(tmp_path.rglob("*.parquet"))]
    assert len(files) > 8

    def read(path: Path) -> tuple:
        found = footers.Footer(path, footers.signature(path))
        stats = {c: found.stats(c) for c in found.columns}
        groups = [found.group_rows(g) for g in range(found.groups)]
        return found.columns, found.metadata, found.rows, groups, stats, found.rules

    by_duckdb = {p: read(p) for p in files}
    monkeypatch.setattr(footers, "DUCKDB_FOOTER_BYTES", -1)  # every footer to pyarrow
    for path in files:
        assert read(path) == by_duckdb[path], path
    assert by_duckdb[bare][4]["state_id"] == [None, None]
    ranges = by_duckdb[built / "states.parquet"][4]["state_id"]
    assert ranges and all(s is not None and s.min is not None for s in ranges)


@pytest.mark.parametrize("tail", [b"", b"PAR1", b"x" * 40, b"\x00" * 20 + b"PAR1"])
def test_a_file_that_is_not_parquet_is_a_table_error(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "states.parquet"
    path.write_bytes(tail)
    with pytest.raises(PipelineError, match="is not a readable table"):
        footers.Footer(path, footers.signature(path))
