"""Every players' artefact file is checked before use (issue 48, items 5 to 7): a damaged, foreign
or out-of-range evaluator, opening book or labelled set is refused in one line naming the file
(never an internal error, a NaN shown as a value, or a compiled search reading past a foreign
array), and a damaged evaluator never breaks an answer the book holds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import ArtefactError
from pipeline.games.knucklebones.game import KnuckleRules
from pipeline.games.knucklebones.players import artefacts
from tests.conftest import invoke

BOARD = KnuckleRules(3, 2, 6)
VARIANT = "knucklebones-3x2"
#: A position the 3x2 book answers (the opening) and one it does not (searched).
OPENING = ["_/_/_", "_/_/_", "4"]
LATER = ["44/1_/3_", "2_/5_/_", "4"]


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as found:
        return {k: found[k] for k in found.files}


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def _edit(change: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        arrays = _npz(path)
        change(arrays)
        _save(path, arrays)

    return damage


def _set(name: str, value: object) -> Callable[[dict[str, np.ndarray]], None]:
    return lambda a: a.__setitem__(name, np.asarray(value))


def _meta(**changes: object) -> Callable[[dict[str, np.ndarray]], None]:
    def change(a: dict[str, np.ndarray]) -> None:
        meta = {**json.loads(str(a["meta"])), **changes}
        a["meta"] = np.array(json.dumps(meta))

    return change


def _scaled(name: str, factor: float) -> Callable[[dict[str, np.ndarray]], None]:
    return lambda a: a.__setitem__(name, a[name] * factor)


def _nan(name: str) -> Callable[[dict[str, np.ndarray]], None]:
    def change(a: dict[str, np.ndarray]) -> None:
        value = a[name].astype(np.float64).copy()
        value.flat[0] = np.nan
        a[name] = value

    return change


#: Damages every .npz artefact meets, and the words its refusal holds.
FILE_DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "empty": (lambda p: p.write_bytes(b""), "cannot be read"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:3000]), "cannot be read"),
    "random bytes": (lambda p: p.write_bytes(bytes(range(256)) * 20), "cannot be read"),
    "a folder": (lambda p: (p.unlink(), p.mkdir()), "it is a folder"),
    "an .npy": (lambda p: np.save(open(p, "wb"), np.arange(3)), "not an .npz"),  # noqa: SIM115
    "no record": (_edit(lambda a: a.pop("meta")), "has no record"),
    "record not JSON": (_edit(_set("meta", "{not json")), "record is not JSON"),
    "record a list": (_edit(_set("meta", "[1, 2]")), "not a JSON object"),
    "no board": (_edit(_meta(columns="three")), "names no board"),
    "another board": (_edit(_meta(rows=3, faces=4)), "records the 3x3-d4 board, not 3x2-d6"),
}
BOOK_DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "NaN values": (_edit(_nan("win")), "win holds NaN"),
    "win above 1": (_edit(_scaled("win", 3.0)), "win holds values outside [-1e-06, 1"),
    "negative ids": (_edit(_scaled("state_id", -1)), "ids outside the board"),
    "ids past the board": (_edit(_scaled("state_id", 10**6)), "ids outside the board"),
    "unsorted ids": (_edit(lambda a: a.__setitem__("state_id", a["state_id"][::-1])), "sorted"),
    "float ids": (_edit(lambda a: a.__setitem__("state_id", a["state_id"] * 1.0)), "not integer"),
    "values short": (_edit(lambda a: a.__setitem__("diff", a["diff"][:-1])), "one value per id"),
    "no plies": (_edit(_meta(plies="all")), "plies"),
}
EVALUATOR_DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "NaN weights": (_edit(_nan("W1")), "W1 holds NaN"),
    "a table cut": (_edit(lambda a: a.__setitem__("E", a["E"][:100])), "E is (100, 128)"),
    "a layer missing": (_edit(lambda a: a.pop("W2")), "lacks W2"),
    "text weights": (_edit(_set("b3", ["a", "b"])), "b3 holds <U1, not floats"),
    "no scale": (_edit(_meta(diff_scale=-1)), "diff_scale"),
}


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the packaged models, read instead of the package's for one test."""
    folder = tmp_path / "models"
    shutil.copytree(artefacts.MODELS, folder)
    monkeypatch.setattr(artefacts, "MODELS", folder)
    _forget()
    yield folder
    _forget()


def _forget() -> None:
    """The packaged files read again (each test a data folder of its own: no answer kept)."""
    artefacts.packaged_book.cache_clear()
    artefacts.packaged_evaluator.cache_clear()


def _kinds(
    extra: dict[str, tuple[Callable[[Path], None], str]],
) -> list[tuple[str, Callable[[Path], None], str]]:
    return [(n, d, w) for n, (d, w) in {**FILE_DAMAGES, **extra}.items()]


@pytest.mark.parametrize(("name", "damage", "words"), _kinds(BOOK_DAMAGES), ids=lambda v: v)
def test_a_damaged_book_is_refused_naming_it(
    models: Path, tmp_path: Path, name: str, damage: Callable[[Path], None], words: str
) -> None:
    path = models / "3x2-d6-book.npz"
    if name == "another board":  # the 3x3-d4 book copied over the 3x2 one
        shutil.copy(models / "3x3-d4-book.npz", path)
    else:
        damage(path)
    with pytest.raises(ArtefactError) as refused:
        artefacts.read_book(path, BOARD)
    assert str(path) in str(refused.value) and words in str(refused.value), refused.value
    for position in (OPENING, LATER):  # the answer reads the book first: one line naming it
        found = invoke(["knucklebones", "solve", *position, "-v", VARIANT, "-d", tmp_path])
        assert found.code == 1 and found.stderr.count("\n") == 1, found.stderr
        assert found.stderr.startswith(f"error: {path} is not a usable opening book")


@pytest.mark.parametrize(("name", "damage", "words"), _kinds(EVALUATOR_DAMAGES), ids=lambda v: v)
def test_a_damaged_evaluator_is_refused_and_the_book_still_answers(
    models: Path, tmp_path: Path, name: str, damage: Callable[[Path], None], words: str
) -> None:
    path = models / "3x2-d6.npz"
    if name == "another board":  # another board's evaluator: the search would read past it
        shutil.copy(models / "3x3-d4.npz", path)
    else:
        damage(path)
    with pytest.raises(ArtefactError) as refused:
        artefacts.read_evaluator(path, BOARD)
    assert str(path) in str(refused.value) and words in str(refused.value), refused.value
    booked = invoke(["knucklebones", "solve", *OPENING, "-v", VARIANT, "-d", tmp_path])
    assert booked.code == 0, booked.stderr
    assert "exact: yes (book)" in booked.stdout and "nan" not in booked.stdout
    searched = invoke(["knucklebones", "solve", *LATER, "-v", VARIANT, "-d", tmp_path])
    assert searched.code == 1 and searched.stderr.count("\n") == 1, searched.stderr
    assert searched.stderr.startswith(f"error: {path} is not a usable evaluator's weights")


# -- labelled sets -------------------------------------------------------------------------------


def _table(path: Path) -> pa.Table:
    return pq.read_table(path)


def _write(table: pa.Table, path: Path, meta: dict | None = None) -> None:
    pq.write_table(table.replace_schema_metadata(meta or table.schema.metadata), path)


def _column(name: str, make: Callable[[pa.Table], pa.Array]) -> Callable[[pa.Table], pa.Table]:
    return lambda t: t.set_column(t.column_names.index(name), name, make(t))


def _floats(value: float) -> Callable[[pa.Table], pa.Array]:
    return lambda t: pa.array(np.full(t.num_rows, value))


#: Damages of a labelled set's contents (its Parquet file readable), and the words refused.
LABELLED_DAMAGES: dict[str, tuple[Callable[[pa.Table], pa.Table], str]] = {
    "NaN values": (_column("win", _floats(np.nan)), "win holds NaN"),
    "infinite values": (_column("diff", _floats(np.inf)), "diff holds NaN or infinite"),
    "win above 1": (_column("win", _floats(1.5)), "win holds values outside"),
    "negative ids": (_column("state_id", lambda t: pa.compute.negate(t["state_id"])), "outside"),
    "ids past the board": (
        _column("state_id", lambda t: pa.compute.add(t["state_id"], 10**12)),
        "outside",
    ),
    "text ids": (_column("state_id", lambda t: t["state_id"].cast(pa.string())), "holds string"),
    "no win column": (lambda t: t.drop(["win"]), "no win column"),
    "no position": (lambda t: t.slice(0, 0), "holds no position"),
    "successors past the board": (
        _column(
            "next_state_id",
            lambda t: pa.FixedSizeListArray.from_arrays(
                pa.compute.add(t["next_state_id"].combine_chunks().flatten(), 10**12), 18
            ),
        ),
        "next_state_id holds ids outside",
    ),
}


@pytest.mark.parametrize("name", list(LABELLED_DAMAGES))
def test_a_labelled_set_with_bad_contents_is_refused(tmp_path: Path, name: str) -> None:
    """NaN or inf values trained all-NaN weights and rated `nan` (exit 0); negative ids wrapped
    around and rated other positions; a missing column or text ids were internal errors."""
    damage, words = LABELLED_DAMAGES[name]
    path = tmp_path / "l.parquet"
    _write(damage(_table(artefacts.path("labelled", BOARD))), path)
    with pytest.raises(ArtefactError) as refused:
        artefacts.read_labelled(path, BOARD)
    assert str(path) in str(refused.value) and words in str(refused.value), refused.value
    rated = invoke(["knucklebones", "rate", "-v", VARIANT, "--labelled", path, "--players",
                    "greedy", "--no-write", "-d", tmp_path])  # fmt: skip
    assert rated.code == 2 and rated.stderr.count("\n") == 1, rated.stderr
    assert "nan" not in rated.stdout


def test_a_labelled_set_without_its_record_or_of_another_board_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.parquet"
    table = _table(artefacts.path("labelled", BOARD))
    _write(table, path, {b"other": b"{}"})
    with pytest.raises(ArtefactError, match=r"has no stb\.labelled record"):
        artefacts.read_labelled(path, BOARD)
    record = json.loads(table.schema.metadata[artefacts.META_KEY])
    _write(table, path, {artefacts.META_KEY: json.dumps({**record, "rows": 3}).encode()})
    with pytest.raises(ArtefactError, match="records the 3x3-d6 board, not 3x2-d6"):
        artefacts.read_labelled(path, BOARD)
    _write(table, path, {artefacts.META_KEY: b"not json"})
    with pytest.raises(ArtefactError, match="record is not JSON"):
        artefacts.read_labelled(path, BOARD)


def test_every_packaged_artefact_reads_whole() -> None:
    for board in (BOARD, KnuckleRules(3, 3, 4)):
        assert artefacts.read_book(artefacts.path("book", board), board).plies >= 5
        assert artefacts.read_evaluator(artefacts.path("evaluator", board), board).trusted
        assert len(artefacts.read_labelled(artefacts.path("labelled", board), board)) > 1000
