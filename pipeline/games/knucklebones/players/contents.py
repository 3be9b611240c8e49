"""What a players' artefact file must hold before anything uses it: the checks every reader of
:mod:`pipeline.games.knucklebones.players.artefacts` makes, so that no compiled kernel ever
indexes a foreign array.

A file is refused (:class:`~pipeline.errors.ArtefactError`, one line naming it) when it cannot be
read as its kind (not a file, empty, truncated, another format under the right suffix, pickled
objects), when its record is missing or not JSON, when it records another board than the one
asked (a 3x3-d4 book saved as the 3x2-d6 one: the search would read past its arrays), or when
an array has the wrong dtype or shape, a value that is not finite or out of its range, or a
state id outside the board. What the values must satisfy among themselves (the Bellman
equation, the exact solve's values) is the contract of
:mod:`pipeline.analysis.knucklebones_artefacts`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from pipeline.errors import ArtefactError, PipelineError
from pipeline.games.knucklebones.game import KnuckleRules, board_game, board_name

T = TypeVar("T")

#: What an artefact of each kind is called in a message.
KINDS = {"evaluator": "evaluator's weights", "book": "opening book", "labelled": "labelled set"}


def refuse(file: Path, kind: str, why: str) -> ArtefactError:
    """The one-line error of a file that is not a usable artefact of ``kind``."""
    return ArtefactError(f"{file} is not a usable {KINDS[kind]}: {why}")


def reason(exc: BaseException) -> str:
    """A reading failure in a few words (the library's first line, or its type)."""
    text = (str(exc).splitlines() or [""])[0][:160]
    return text or type(exc).__name__


def read_whole(file: Path, kind: str, load: Callable[[Path], T]) -> T:
    """``load(file)``: an artefact read whole; refused where it is no regular file or its
    reader fails."""
    file = Path(file)
    if not file.is_file():
        what = "a folder" if file.is_dir() else "no regular file"
        raise refuse(file, kind, f"it is {what}")
    try:
        return load(file)
    except Exception as exc:  # a damaged file raises whatever its bytes lead the reader to
        raise refuse(file, kind, f"it cannot be read ({reason(exc)})") from None


def read_npz(
    file: Path, kind: str, expected: KnuckleRules | None
) -> tuple[dict[str, np.ndarray], dict[str, Any], KnuckleRules]:
    """Every array of an .npz artefact, read whole (no pickled object is ever loaded), its
    JSON record (``meta``) and the board the record names (checked against ``expected``)."""

    def load(file: Path) -> dict[str, np.ndarray]:
        found = np.load(file, allow_pickle=False)
        if not isinstance(found, np.lib.npyio.NpzFile):
            raise ValueError("an .npy array, not an .npz archive")
        with found:
            return {name: np.asarray(found[name]) for name in found.files}

    arrays = read_whole(file, kind, load)
    meta = arrays.get("meta")
    if meta is None or meta.shape != () or meta.dtype.kind not in "US":
        raise refuse(file, kind, "it has no record (meta)")
    record = parse_record(str(meta), file, kind)
    return arrays, record, board(record, file, kind, expected)


def parse_record(text: str | bytes, file: Path, kind: str) -> dict[str, Any]:
    """A record's text as a dict (a labelled set keeps it in its Parquet metadata)."""
    try:
        found = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        raise refuse(file, kind, "its record is not JSON") from None
    if not isinstance(found, dict):
        raise refuse(file, kind, "its record is not a JSON object")
    return found


def board(
    meta: dict[str, Any], file: Path, kind: str, expected: KnuckleRules | None
) -> KnuckleRules:
    """The board and die the record names, checked against ``expected`` (the board asked)."""
    try:
        sizes = [meta[k] for k in ("columns", "rows", "faces")]
        if not all(type(v) is int for v in sizes):
            raise TypeError
        rules = KnuckleRules(*sizes)
    except (KeyError, TypeError, PipelineError):
        raise refuse(file, kind, "its record names no board (columns, rows, faces)") from None
    if expected is not None and board_name(rules) != board_name(expected):
        raise refuse(
            file, kind, f"it records the {board_name(rules)} board, not {board_name(expected)}"
        )
    return rules


def floats(value: np.ndarray, name: str, file: Path, kind: str) -> np.ndarray:
    """``value`` as float64 where it is a float array whose every value is finite."""
    if value.dtype.kind != "f":
        raise refuse(file, kind, f"{name} holds {value.dtype}, not floats")
    out = np.asarray(value, dtype=np.float64)
    if not np.isfinite(out).all():
        raise refuse(file, kind, f"{name} holds NaN or infinite values")
    return out


def ids(value: np.ndarray, rules: KnuckleRules, file: Path, kind: str) -> np.ndarray:
    """``value`` (a ``state_id`` column) as int64 state ids of the board (``-1`` nowhere):
    integers in range."""
    if value.dtype.kind not in "iu":
        raise refuse(file, kind, f"state_id holds {value.dtype}, not integer ids")
    out = np.asarray(value, dtype=np.int64)
    states = board_game(rules).n_states
    if out.size and (int(out.min()) < 0 or int(out.max()) >= states):
        raise refuse(file, kind, f"state_id holds ids outside the board's 0..{states - 1:,}")
    return out


def in_range(value: np.ndarray, low: float, high: float, name: str, file: Path, kind: str) -> None:
    """Refuse values outside ``[low, high]`` (a win chance beyond [0, 1], a lead beyond any)."""
    if value.size and (float(value.min()) < low or float(value.max()) > high):
        raise refuse(file, kind, f"{name} holds values outside [{low:g}, {high:g}]")


def largest_lead(rules: KnuckleRules) -> float:
    """No score difference is larger: every slot a die of the top face, squared by matches."""
    return float(rules.columns * rules.faces * rules.rows**2)


#: Slack on a value's range: the exact solvers' tolerance and a float32 file's rounding.
SLACK = 1e-6


# -- evaluators ----------------------------------------------------------------------------------


def evaluator_shapes(rules: KnuckleRules, arrays: dict[str, np.ndarray]) -> dict[str, tuple]:
    """The shape each of an evaluator's arrays must have on ``rules``' board (the widths of
    its layers taken from the file, each layer's input the last one's output)."""
    t = board_game(rules).t
    counts = rules.columns * rules.rows + 1
    width, h1, h2 = (arrays[k].shape[-1] if arrays[k].ndim == 2 else -1 for k in ("E", "W1", "W2"))
    return {
        "E": (t.n_pairs, width), "C": (counts * counts, width), "G": (2 * rules.faces, width),
        "W1": (width, h1), "b1": (h1,), "W2": (h1, h2), "b2": (h2,), "W3": (h2, 2), "b3": (2,),
    }  # fmt: skip


def check_evaluator(
    arrays: dict[str, np.ndarray], names: tuple[str, ...], rules: KnuckleRules, file: Path
) -> dict[str, np.ndarray]:
    """The evaluator's arrays as float64, each present, finite and of its board's shape."""
    lacking = [n for n in names if n not in arrays]
    if lacking:
        raise refuse(file, "evaluator", f"it lacks {', '.join(lacking)}")
    shapes = evaluator_shapes(rules, arrays)
    out = {}
    for name in names:
        value = floats(arrays[name], name, file, "evaluator")
        if value.shape != shapes[name] or min(shapes[name]) < 1:
            raise refuse(
                file, "evaluator", f"{name} is {value.shape}, not {shapes[name]} as the "
                f"{board_name(rules)} board needs",
            )  # fmt: skip
        out[name] = value
    return out


def diff_scale(meta: dict[str, Any], file: Path) -> float:
    """The evaluator's score scale: a positive finite number."""
    scale = meta.get("diff_scale")
    if not isinstance(scale, int | float) or not np.isfinite(scale) or scale <= 0:
        raise refuse(file, "evaluator", "its record's diff_scale is not a positive number")
    return float(scale)


# -- books ---------------------------------------------------------------------------------------


def book_ids(arrays: dict[str, np.ndarray], rules: KnuckleRules, file: Path) -> np.ndarray:
    """The book's sorted state ids (stored whole, or compact: the first and the gaps after it),
    each once and every one a position of the board."""
    if "state_id" in arrays:
        found = arrays["state_id"].reshape(-1)
    elif "state_id_first" in arrays and "state_id_gaps" in arrays:
        first, gaps = arrays["state_id_first"].reshape(-1), arrays["state_id_gaps"].reshape(-1)
        if first.size != 1 or first.dtype.kind not in "iu" or gaps.dtype.kind not in "iu":
            raise refuse(file, "book", "its compact ids are not one first id and integer gaps")
        with np.errstate(over="ignore"):
            found = np.concatenate([first, gaps]).astype(np.int64).cumsum()
    else:
        raise refuse(file, "book", "it holds no state ids")
    found = ids(found, rules, file, "book")
    if not found.size or (found.size > 1 and not (np.diff(found) > 0).all()):
        raise refuse(file, "book", "its ids are not sorted, each once")
    return found


def book_values(
    arrays: dict[str, np.ndarray], size: int, rules: KnuckleRules, file: Path
) -> tuple[np.ndarray, np.ndarray]:
    """The book's win chances and leads: one each per id, finite and in range."""
    out = []
    for name in ("win", "diff"):
        if name not in arrays:
            raise refuse(file, "book", f"it holds no {name} values")
        value = floats(arrays[name], name, file, "book")
        if value.shape != (size,):
            raise refuse(file, "book", f"{name} holds {value.shape}, not one value per id")
        out.append(value)
    in_range(out[0], -SLACK, 1 + SLACK, "win", file, "book")
    most = largest_lead(rules) + SLACK
    in_range(out[1], -most, most, "diff", file, "book")
    return out[0], out[1]


def book_plies(meta: dict[str, Any], rules: KnuckleRules, file: Path) -> int:
    """The placements the book covers, as its record says: 0 up to a full game's."""
    plies = meta.get("plies")
    if type(plies) is not int or not 0 <= plies <= 2 * rules.slots:
        raise refuse(file, "book", "its record's plies is not a number of placements")
    return plies


# -- labelled sets -------------------------------------------------------------------------------


def labelled_columns(table: Any, width: int, file: Path, compact: bool) -> None:
    """Refuse a labelled set's table that lacks a column or holds the wrong type in one."""
    import pyarrow as pa

    def kind(name: str) -> Any:
        return table.schema.field(name).type if name in table.column_names else None

    wanted: dict[str, Any] = {
        "state_id": pa.types.is_integer, "ply": pa.types.is_integer,
        "dice": pa.types.is_integer, "source": pa.types.is_string,
    }  # fmt: skip
    if not compact:
        wanted["next_state_id"] = lambda t: _fixed(t, width, pa.types.is_integer)
    for name in ("win", "diff"):
        wanted[name] = pa.types.is_floating
        wanted[f"choice_{name}"] = lambda t: _fixed(t, width, pa.types.is_floating)
    for name, test in wanted.items():
        found = kind(name)
        if found is None:
            raise refuse(file, "labelled", f"it has no {name} column")
        if not test(found):
            raise refuse(file, "labelled", f"its {name} column holds {found}")
    if table.num_rows == 0:
        raise refuse(file, "labelled", "it holds no position")


def _fixed(kind: Any, width: int, inner: Any) -> bool:
    """Whether ``kind`` is a list of ``width`` items of the type ``inner`` tests (fixed size)."""
    import pyarrow as pa

    return bool(
        pa.types.is_fixed_size_list(kind) and kind.list_size == width and inner(kind.value_type)
    )


def labelled_values(
    values: dict[str, np.ndarray], choices: dict[str, np.ndarray], next_id: np.ndarray,
    rules: KnuckleRules, file: Path,
) -> None:  # fmt: skip
    """Refuse a labelled set whose values are not finite or out of range, or whose choices have
    a value where they are no move (or none where they are) or out of range."""
    states = board_game(rules).n_states
    if next_id.size and (int(next_id.min()) < -1 or int(next_id.max()) >= states):
        raise refuse(file, "labelled", "next_state_id holds ids outside the board")
    most = largest_lead(rules) + SLACK
    for name, (low, high) in (("win", (-SLACK, 1 + SLACK)), ("diff", (-most, most))):
        value = values[name]
        if not np.isfinite(value).all():
            raise refuse(file, "labelled", f"{name} holds NaN or infinite values")
        in_range(value, low, high, name, file, "labelled")
        choice = choices[name]
        if np.isinf(choice).any() or not np.array_equal(np.isnan(choice), next_id < 0):
            raise refuse(file, "labelled", f"choice_{name} has values where no move is")
        in_range(choice[next_id >= 0], low, high, f"choice_{name}", file, "labelled")
