"""The players' artefacts as files: evaluators, opening books and labelled sets, one format
and one reader each.

Where they live: the package keeps a board's artefacts in :data:`MODELS` beside this module,
named by the board (:func:`~pipeline.games.knucklebones.game.board_name`, ``3x3-d4``):
``<board>.npz`` (an evaluator's weights and record), ``<board>-book.npz`` (an opening book) and
``<board>-labelled.parquet`` (held-out labelled positions; the repository's, not the wheel's).

What a writer writes: each ``*_writer`` returns the function that writes an artefact's bytes
into an open binary file; the command line hands it to the store's atomic writer
(:func:`pipeline.store.files.write_file_atomic`: a temporary file, then a rename), so nothing
in ``pipeline/games/`` writes a file. Each ``read_*`` is the one reader of its kind: every face
(the answer's packaged lookups, `rate`, `train`, `check-artefacts`, the GPU call's summary)
reads through it, so that what a file must hold is checked in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np

from pipeline.games.knucklebones.game import KnuckleRules, board_name
from pipeline.games.knucklebones.players import contents
from pipeline.games.knucklebones.players.book import Book
from pipeline.games.knucklebones.players.evaluator import ARRAYS, Evaluator
from pipeline.games.knucklebones.players.labels import FIELDS, Labelled

T = TypeVar("T")

#: Where the packaged artefacts live.
MODELS = Path(__file__).with_name("models")
#: Each kind's file name after the board's.
SUFFIXES = {"evaluator": ".npz", "book": "-book.npz", "labelled": "-labelled.parquet"}
#: The Parquet metadata key of a labelled set's record (board, seeds, where the values came from).
META_KEY = b"stb.labelled"
#: The float columns of a compact file are stored split into byte streams (Parquet's
#: BYTE_STREAM_SPLIT): a float32's sign and exponent bytes then sit together and compress.
_COMPACT_DTYPE = np.float32
#: What writes an artefact's bytes into an open binary file.
Writer = Callable[[BinaryIO], object]


def path(kind: str, rules: KnuckleRules, models: Path | None = None) -> Path:
    """Where the ``kind`` (:data:`SUFFIXES`) of ``rules``' board lives (in the package, or in
    the folder ``models``)."""
    return (models or MODELS) / f"{board_name(rules)}{SUFFIXES[kind]}"


def _record(artefact: Any, **more: Any) -> np.ndarray:
    """An artefact's record as its file keeps it: its own (provenance, settings), its board,
    and ``more``, as JSON (a numpy string, as an .npz holds it)."""
    board = {"columns": artefact.columns, "rows": artefact.rows, "faces": artefact.faces}
    return np.array(json.dumps({**artefact.meta, **board, **more}, sort_keys=True))


# -- evaluators ----------------------------------------------------------------------------------


def evaluator_writer(evaluator: Evaluator) -> Writer:
    """The weights (float32) and the record of ``evaluator`` as an .npz file."""
    blob: dict[str, Any] = {k: evaluator.arrays[k].astype(np.float32) for k in ARRAYS}
    blob["meta"] = _record(evaluator, diff_scale=evaluator.diff_scale)
    return lambda fh: np.savez_compressed(fh, **blob)


def read_evaluator(file: Path, board: KnuckleRules | None = None) -> Evaluator:
    """An evaluator from its .npz file, every array checked against the board its record
    names, and that against ``board`` where given (:mod:`.contents`: ArtefactError, one line
    naming the file, for anything else)."""
    found, meta, rules = contents.read_npz(file, "evaluator", board)
    arrays = contents.check_evaluator(found, ARRAYS, rules, file)
    return Evaluator(
        rules.columns, rules.rows, rules.faces, arrays, contents.diff_scale(meta, file), meta
    )


@lru_cache(maxsize=16)
def packaged_evaluator(columns: int, rows: int, faces: int) -> Evaluator | None:
    """The packaged evaluator of a board, or None where there is none."""
    return _packaged("evaluator", read_evaluator, KnuckleRules(columns, rows, faces))


def _packaged(kind: str, read: Callable[[Path, KnuckleRules], T], rules: KnuckleRules) -> T | None:
    """``read`` of the packaged ``kind`` of a board, or None where there is none."""
    file = path(kind, rules)
    return read(file, rules) if file.exists() or file.is_symlink() else None


# -- opening books -------------------------------------------------------------------------------


def book_writer(book: Book, compact: bool = False) -> Writer:
    """The book as an .npz file. ``compact``: the values as float32 (within half a float32 ulp:
    3e-8 for a win chance; the full game's tables store the same) and the sorted ids as their
    first and the gaps after it (uint32 where every gap fits): 8 bytes a position before
    compression instead of 24, so that the full game's 900,000 positions within 7 placements
    fit a GPU call's 16 MiB file."""
    record = _record(book, plies=book.plies, compact=compact)
    arrays: dict[str, Any] = {"win": book.win, "diff": book.diff, "state_id": book.state_id}
    if compact:
        gaps = np.diff(book.state_id)
        small = gaps.size == 0 or int(gaps.max()) < 2**32
        arrays = {
            "state_id_first": book.state_id[:1],
            "state_id_gaps": gaps.astype(np.uint32 if small else np.int64),
            "win": book.win.astype(np.float32), "diff": book.diff.astype(np.float32),
        }  # fmt: skip
    return lambda fh: np.savez_compressed(fh, meta=record, **arrays)


def read_book(file: Path, board: KnuckleRules | None = None) -> Book:
    """A book from its .npz file, compact or not (values as float64 either way), its ids and
    values checked against the board its record names, and that against ``board`` where given
    (:mod:`.contents`: ArtefactError, one line naming the file, for anything else)."""
    found, meta, rules = contents.read_npz(file, "book", board)
    ids = contents.book_ids(found, rules, file)
    win, diff = contents.book_values(found, len(ids), rules, file)
    plies = contents.book_plies(meta, rules, file)
    return Book(rules.columns, rules.rows, rules.faces, plies, ids, win, diff, meta)


@lru_cache(maxsize=16)
def packaged_book(columns: int, rows: int, faces: int) -> Book | None:
    """The packaged book of a board, or None where there is none."""
    return _packaged("book", read_book, KnuckleRules(columns, rows, faces))


# -- labelled sets -------------------------------------------------------------------------------


def to_arrow(labelled: Labelled, compact: bool = False) -> Any:
    """The labelled set as an Arrow table: one row per position, its choices as fixed-size
    lists (``faces * columns`` entries, choice ``die_index * columns + j``).

    ``compact``: values and choices as float32 (each within half a float32 ulp of the float64
    value: 3e-8 for a win chance, 4e-6 for a score difference of 100) and no
    ``next_state_id`` column (it follows from the state id: :func:`~.cpu.successor_ids`). The
    full game's 18 choices then cost about 110 bytes a position instead of 450, so that
    100,000 positions fit in one file of a GPU call's 16 MiB."""
    import pyarrow as pa

    width = labelled.faces * labelled.columns
    kind = pa.float32() if compact else pa.float64()

    def fixed(values: np.ndarray, kind: Any) -> Any:
        flat = pa.array(values.reshape(-1), type=kind, from_pandas=True)
        return pa.FixedSizeListArray.from_arrays(flat, width)

    columns = {
        "state_id": pa.array(labelled.state_id, pa.int64()),
        "source": pa.array(labelled.source.astype(str)),
        "ply": pa.array(labelled.ply, pa.int16()),
        "dice": pa.array(labelled.dice, pa.int16()),
    }
    if not compact:
        columns["next_state_id"] = fixed(labelled.next_id, pa.int64())
    for name in labelled.values:
        values, choices = labelled.values[name], labelled.choices[name]
        if compact:
            values, choices = values.astype(_COMPACT_DTYPE), choices.astype(_COMPACT_DTYPE)
        columns[name] = pa.array(values, kind)
        columns[f"choice_{name}"] = fixed(choices, kind)
    table = pa.table(columns)
    return table.replace_schema_metadata({META_KEY: str(_record(labelled, compact=compact))})


def labelled_writer(labelled: Labelled, compact: bool = False) -> Writer:
    """The labelled set as a Parquet file (zstd); ``compact``: see :func:`to_arrow`."""
    import pyarrow.parquet as pq

    table = to_arrow(labelled, compact)
    options: dict[str, Any] = {"compression": "zstd"}
    if compact:
        floats = [*labelled.values, *(f"choice_{n}.list.element" for n in labelled.values)]
        options.update(compression_level=9, use_byte_stream_split=floats,
                       use_dictionary=["source"])  # fmt: skip
    return lambda fh: pq.write_table(table, fh, **options)


def read_labelled(file: Path, board: KnuckleRules | None = None) -> Labelled:
    """A labelled set from its Parquet file, compact or not (values as float64 either way;
    a compact file's successor ids are recomputed from the state ids), every column's type,
    every id and value checked against the board its record names, and that against
    ``board`` where given (:mod:`.contents`: ArtefactError, one line naming the file, for
    anything else)."""
    import pyarrow.parquet as pq

    table = contents.read_whole(file, "labelled", pq.read_table)
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise contents.refuse(file, "labelled", f"it has no {META_KEY.decode()} record")
    record = contents.parse_record(meta[META_KEY], file, "labelled")
    rules = contents.board(record, file, "labelled", board)
    c, f = rules.columns, rules.faces
    compact = "next_state_id" not in table.column_names
    contents.labelled_columns(table, f * c, file, compact)

    def fixed(name: str) -> np.ndarray:
        col = table[name].combine_chunks()
        return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, f * c)

    state_id = contents.ids(table["state_id"].to_numpy(), rules, file, "labelled")
    if compact:  # the successors follow from the ids
        from pipeline.games.knucklebones.exact.cpu import successor_ids

        nxt = successor_ids(rules, state_id)
    else:
        nxt = np.asarray(fixed("next_state_id"), dtype=np.int64)
    out = Labelled(
        c, rules.rows, f, state_id, np.asarray(table["source"].to_pylist()),
        table["ply"].to_numpy(), table["dice"].to_numpy(), nxt, meta=record,
    )  # fmt: skip
    for name in FIELDS.values():
        out.values[name] = np.asarray(table[name].to_numpy(zero_copy_only=False), np.float64)
        out.choices[name] = np.asarray(fixed(f"choice_{name}"), dtype=np.float64)
    contents.labelled_values(out.values, out.choices, nxt, rules, file)
    return out


# -- exact decisions (the full game's held-out set) ----------------------------------------------

#: A decisions file larger than this is refused before it is parsed.
MAX_DECISIONS_BYTES = 64 * 2**20
#: The fields of each decision in a decisions file.
DECISION_FIELDS = ("board", "opponent", "die", "dice_on_table", "win", "score")


@dataclass(frozen=True)
class ExactDecisions:
    """Decisions with the exact value of every column (a decisions file's): the position in the
    user's column order, the die, each column's win chance and score difference (NaN where the
    column is full) and the dice on both boards."""

    pairs: np.ndarray
    die: np.ndarray
    win: np.ndarray
    diff: np.ndarray
    dice: np.ndarray

    def __len__(self) -> int:
        return int(self.die.shape[0])


def decisions_path(rules: KnuckleRules) -> Path:
    """Where the package keeps a board's exact decisions (the full game's only)."""
    return MODELS / f"{board_name(rules)}-decisions.json"


def read_decisions(file: Path, rules: KnuckleRules) -> ExactDecisions:
    """Exact decisions of ``rules``' board from a decisions file (JSON: a list of entries with
    :data:`DECISION_FIELDS`, as the full game's in ``models/``); ValueError, naming the entry,
    for anything else: not JSON, a field missing or of the wrong type, a board of another size
    or die, a die off the die, a value that is not finite or a win chance outside [0, 1], a
    full column with a value or an open one without, a dice count that is not the boards'."""
    from pipeline.games.knucklebones.game import Knucklebones

    if Path(file).stat().st_size > MAX_DECISIONS_BYTES:
        raise ValueError(f"{file} is larger than {MAX_DECISIONS_BYTES // 2**20} MiB")
    try:
        entries = json.loads(Path(file).read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{file} is not a decisions file (not JSON: {exc})") from None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{file} is not a decisions file (not a non-empty list of decisions)")
    game = Knucklebones(rules)
    rows = [_decision(game, entry, k) for k, entry in enumerate(entries)]
    return ExactDecisions(*(np.array([r[i] for r in rows]) for i in range(5)))


def _decision(game: Any, entry: Any, k: int) -> tuple[np.ndarray, int, list, list, int]:
    """One entry of a decisions file, checked (see :func:`read_decisions`)."""
    from pipeline.errors import UsageError
    from pipeline.games.knucklebones.numbering import read_board

    where = f"decision {k + 1}"
    if not isinstance(entry, dict) or any(f not in entry for f in DECISION_FIELDS):
        raise ValueError(f"{where}: an object with the fields {', '.join(DECISION_FIELDS)}")
    r = game.r
    if not all(isinstance(entry[f], str) for f in ("board", "opponent")):
        raise ValueError(f"{where}: board and opponent are board texts")
    try:
        pairs = game.pairs_of_boards(
            read_board(entry["board"], r, "board"), read_board(entry["opponent"], r, "opponent")
        )
    except UsageError as exc:
        raise ValueError(f"{where}: {exc}") from None
    die, dice = entry["die"], entry["dice_on_table"]
    if type(die) is not int or not 1 <= die <= r.faces:
        raise ValueError(f"{where}: the die must be a whole number from 1 to {r.faces}")
    t = game.t
    counted = int(t.mover_size[pairs].sum() + t.opp_size[pairs].sum())
    if type(dice) is not int or dice != counted:
        raise ValueError(f"{where}: dice_on_table is {dice!r}, the boards hold {counted}")
    if game.finished(pairs):
        raise ValueError(f"{where}: the game is over (a board is full)")
    open_ = t.mover_size[pairs] < r.rows
    win = _column_values(entry["win"], open_, where, "win", (0.0, 1.0))
    diff = _column_values(entry["score"], open_, where, "score", (-1e9, 1e9))
    return pairs, die, win, diff, dice


def _column_values(
    found: Any, open_: np.ndarray, where: str, name: str, bounds: tuple[float, float]
) -> list[float]:
    """A decision's column values: a number for each open column, null for each full one."""
    if not isinstance(found, list) or len(found) != len(open_):
        raise ValueError(f"{where}: {name} must list a value for each of {len(open_)} columns")
    out = []
    for j, (v, free) in enumerate(zip(found, open_, strict=True)):
        if v is None and not free:
            out.append(float("nan"))
            continue
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if not free or not number or not bounds[0] <= float(v) <= bounds[1]:
            state = "a full column has no value" if not free else f"a number in {list(bounds)}"
            raise ValueError(f"{where}: {name} of column {j + 1} is {v!r} ({state})")
        out.append(float(v))
    return out
