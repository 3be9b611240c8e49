"""The Knucklebones artefacts (:mod:`pipeline.games.knucklebones.players.artefacts`: opening
books and labelled sets, made by an exact solve) checked against their data contract, and what
a book tells.

The full game's (3x3, six-sided die) are made on a GPU in one call (issue 38:
``benchmarks/gpu_artefacts.py``, docs/knucklebones-full-game.md) and committed; every later
run, test and user reads the exact game from them without a GPU. What a book tells:

- :func:`first_die`: the first player's chance (and expected lead) for each first die: the
  first placement has no choice (every column of empty boards is the same position), so it is
  one minus the value of the position the second player then faces;
- :func:`replies`: the second player's best first placement for each pair of first dice.

:func:`check_book`, :func:`check_labelled` and :func:`check_packaged` are the contract every
packaged artefact meets: the values obey the Bellman equation among themselves (a position's
value is the mean over the die of its best choice) within the solve's tolerance and the files'
float32 rounding (:func:`bellman_residual`, :func:`bellman_allowance`), they lie in their
objective's range, the full game's start value is the one published (:data:`PUBLISHED_START`),
and each file records its provenance (:data:`PROVENANCE`). An artefact not made yet is reported
absent, not failed. Each check is a :class:`Finding` (plain data: the GPU call records them with
neither polars nor DuckDB at hand); `stb-pipeline knucklebones check-artefacts` runs them as data
contracts beside `verify`'s (:func:`contract_results`: the same results, printed and failed the
same way, exit 3 on a violation).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import PipelineError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules, board_game
from pipeline.games.knucklebones.players import artefacts, labels
from pipeline.games.knucklebones.players.book import Book
from pipeline.games.knucklebones.players.contents import KINDS, largest_lead

if TYPE_CHECKING:
    from pipeline.analysis.contracts import ContractResult

#: The full game's board: 3 columns of 3, a six-sided die.
FULL_GAME = (3, 3, 6)
#: The full game's start values as first solved on a GPU (an H100, 2026-11-26, float64 bounds,
#: every value within 1e-11: benchmarks/gpu-runs/2026-11-26-h100/all.md,
#: docs/knucklebones-full-game.md): the first player's chance (a draw 1/2) and expected lead.
PUBLISHED_START = {"win": 0.509030469096103, "diff": 0.57704124756742}
#: What every artefact records of how it was made.
PROVENANCE = ("device", "code_hash", "seconds", "tolerance")
#: Half a float32 ulp, relative: the rounding of a compact file's values.
FLOAT32_ROUNDING = 2.0**-24


# -- what the book tells ---------------------------------------------------------------------


def _start(game: Any) -> np.ndarray:
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    return pairs_of(game.r, np.array([game.start_state()]))[0]


def first_die(book: Book) -> list[dict[str, Any]]:
    """For each first die: the first player's chance (``win``, a draw 1/2) and expected lead
    (``diff``), from the position the second player faces after it (in the book from 1
    placement on)."""
    game = board_game(KnuckleRules(book.columns, book.rows, book.faces))
    start = _start(game)
    rows = []
    for die in range(1, book.faces + 1):
        _, after = game.successors(start, die)[0]  # every column of empty boards is the same
        found = book.values(np.array([game.state_of(after)]))
        if found is None:
            raise ValueError("the book lacks the positions after the first die")
        win, diff = found
        rows.append({"die": die, "win": 1.0 - float(win[0]), "diff": -float(diff[0])})
    return rows


def replies(book: Book) -> list[dict[str, Any]]:
    """For each first die and the second player's die: the second player's best first
    placement (``facing``: the column opposite the first die, ``open``: one of the others),
    its chance (``win``) and expected lead (``diff``), and the other placement's (best by the
    chance, then the lead). Needs a book of 2 placements or more."""
    game = board_game(KnuckleRules(book.columns, book.rows, book.faces))
    t = game.t
    start = _start(game)
    rows = []
    for first in range(1, book.faces + 1):
        _, faced = game.successors(start, first)[0]
        for die in range(1, book.faces + 1):
            options: dict[str, tuple[float, float]] = {}
            for column, after in game.successors(faced, die):
                kind = "facing" if t.opp_size[faced[column]] > 0 else "open"
                found = book.values(np.array([game.state_of(after)]))
                if found is None:
                    raise ValueError("the book lacks the positions after the first two dice")
                options[kind] = (1.0 - float(found[0][0]), -float(found[1][0]))
            ranked = sorted(options.items(), key=lambda kv: kv[1], reverse=True)
            best, (win, diff) = ranked[0]
            other = ranked[1] if len(ranked) > 1 else None
            rows.append({
                "first": first, "die": die, "best": best, "win": win, "diff": diff,
                "other": None if other is None else other[0],
                "other_win": None if other is None else other[1][0],
                "other_diff": None if other is None else other[1][1],
            })  # fmt: skip
    return rows


# -- the contract ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One check of one artefact: ``ok`` None when it could not apply (the artefact is absent,
    or the check has nothing to compare with)."""

    artefact: str
    check: str
    ok: bool | None
    detail: str = ""
    checked: int = 1
    """How many values (positions, keys) the check read."""

    def line(self) -> str:
        word = {True: "ok", False: "FAIL", None: "skip"}[self.ok]
        return (
            f"{word:<4} {self.artefact}: {self.check}{f' ({self.detail})' if self.detail else ''}"
        )


def _provenance(name: str, meta: dict[str, Any]) -> Finding:
    lacking = [k for k in PROVENANCE if k not in meta]
    return Finding(name, "provenance recorded: " + ", ".join(PROVENANCE), not lacking,
                   f"lacks {', '.join(lacking)}" if lacking else "", len(PROVENANCE))  # fmt: skip


def _rounding(meta: dict[str, Any]) -> float:
    return FLOAT32_ROUNDING if meta.get("compact") else 0.0


def _book_bellman(
    book: Book, name: str, game: Any, tol: float, rounding: float, most: float
) -> list[Finding]:
    """The Bellman equation, both fields, wherever every successor of a position is in the
    book (the positions before its last placement)."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids

    r = game.r
    ids = book.state_id
    out: list[Finding] = []
    pos = pairs_of(r, ids)
    live = ~game.terminal_mask(pos)
    succ = successor_ids(r, ids[live])
    at = np.searchsorted(ids, np.where(succ >= 0, succ, 0))
    at = np.minimum(at, len(ids) - 1)
    inside = (succ < 0) | (ids[at] == succ)
    full = inside.all(axis=1)
    for field, values, offset, scale in (("win", book.win, 1.0, 1.0), ("diff", book.diff, 0.0,
                                                                         most)):  # fmt: skip
        choice = np.where(succ >= 0, offset - values[at], -np.inf)[full]
        best = choice.reshape(-1, r.faces, r.columns).max(axis=2).mean(axis=1)
        residual = np.abs(values[live][full] - best)
        allowed = 2 * tol + 2 * rounding * max(1.0, float(np.abs(values).max())) + 1e-12 * scale
        worst = float(residual.max(initial=0.0))
        out.append(Finding(
            name, f"Bellman equation ({field}) of the {int(full.sum()):,} positions whose "
            "successors are all in the book", worst <= allowed,
            f"largest residual {worst:.3g}, allowed {allowed:.3g}", int(full.sum()),
        ))  # fmt: skip
    return out


def check_book(book: Book, name: str = "book") -> list[Finding]:
    """The book's contract: its ids are every position within its placements, each once; its
    values lie in range and obey the Bellman equation wherever a position's successors are all
    in it; the first dice's chances average to the start value; the full game's start value
    is :data:`PUBLISHED_START` within the tolerances; its provenance is recorded."""
    from pipeline.games.knucklebones.players.book import reachable

    game = board_game(KnuckleRules(book.columns, book.rows, book.faces))
    r = game.r
    tol = float(book.meta.get("tolerance", DEFAULT_TOLERANCE))
    most = largest_lead(r)
    rounding = _rounding(book.meta)
    out = [_provenance(name, book.meta)]
    ids = book.state_id
    out.append(Finding(
        name, f"every position within {book.plies} placements, each once, sorted",
        bool(np.array_equal(ids, reachable(game, book.plies))), f"{len(book):,} positions",
    ))  # fmt: skip
    finite = np.isfinite(book.win).all() and np.isfinite(book.diff).all()
    in_range = (
        finite
        and book.win.min() >= -tol and book.win.max() <= 1 + tol
        and np.abs(book.diff).max() <= most + tol
    )  # fmt: skip
    out.append(Finding(name, "win in [0, 1], diff within the largest score", bool(in_range)))
    out += _book_bellman(book, name, game, tol, rounding, most)
    start = book.values(np.array([game.start_state()]))
    if start is None:
        out.append(Finding(name, "holds the start position", False))
        return out
    chances = first_die(book) if book.plies >= 1 else []
    for field, k in (("win", 0), ("diff", 1)):
        value = float(start[k][0])
        if chances:
            mean = float(np.mean([row[field] for row in chances]))
            allowed = 2 * tol + 2 * rounding * max(1.0, abs(value)) + 1e-12
            out.append(Finding(
                name, f"the first dice's {field} average to the start value",
                abs(mean - value) <= allowed, f"{mean:.12f} against {value:.12f}",
            ))  # fmt: skip
        if (book.columns, book.rows, book.faces) == FULL_GAME:
            published = PUBLISHED_START[field]
            # both solves are within tol of the exact value; the file rounds to float32
            allowed = 2 * tol + rounding * max(1.0, abs(value)) + 1e-12
            out.append(Finding(
                name, f"the start value ({field}) is the published {published:.12f}",
                abs(value - published) <= allowed, f"{value:.12f}",
            ))  # fmt: skip
            recorded = book.meta.get("start", {}).get(field)
            if recorded is not None:  # the solve's own float64 start value
                out.append(Finding(
                    name, f"the solve's start value ({field}) is the published one",
                    abs(float(recorded) - published) <= 2 * tol + 1e-12, f"{recorded!r}",
                ))  # fmt: skip
    return out


def check_labelled(found: labels.Labelled, name: str = "labelled") -> list[Finding]:
    """The labelled set's contract: every position's value is the mean over the die of its best
    choice (within :func:`bellman_allowance`), values lie in range, a choice has a value
    exactly where it is a move, positions are in play and each once; the full game's set holds
    at least 100,000 positions; its provenance is recorded."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    game = board_game(KnuckleRules(found.columns, found.rows, found.faces))
    tol = float(found.meta.get("tolerance", DEFAULT_TOLERANCE))
    most = largest_lead(game.r)
    out = [_provenance(name, found.meta)]
    ids = found.state_id
    unique = len(np.unique(ids)) == len(ids)
    in_play = not game.terminal_mask(pairs_of(game.r, ids)).any() if len(ids) else True
    out.append(Finding(name, "positions in play, each once", bool(unique and in_play),
                       f"{len(found):,} positions", len(found)))  # fmt: skip
    if (found.columns, found.rows, found.faces) == FULL_GAME:
        out.append(Finding(name, "at least 100,000 positions", len(found) >= 100_000))
    legal = found.next_id >= 0
    for field in labels.FIELDS.values():
        if field not in found.values:
            out.append(Finding(name, f"holds {field} values", False))
            continue
        values, choices = found.values[field], found.choices[field]
        lo, hi = (0.0, 1.0) if field == "win" else (-most, most)
        ok = (
            np.isfinite(values).all()
            and values.min(initial=lo) >= lo - tol and values.max(initial=hi) <= hi + tol
            and bool(np.array_equal(~np.isnan(choices), legal))
        )  # fmt: skip
        out.append(Finding(name, f"{field} in range; a choice has a value exactly where it is a "
                           "move", bool(ok), checked=int(values.size + choices.size)))  # fmt: skip
        worst = float(bellman_residual(found, field).max(initial=0.0))
        allowed = bellman_allowance(found, field)
        out.append(Finding(
            name, f"Bellman equation ({field}) among the positions' own values",
            worst <= allowed, f"largest residual {worst:.3g}, allowed {allowed:.3g}", len(found),
        ))  # fmt: skip
    if set(labels.FIELDS.values()) <= set(found.values):
        out += choices_meet_their_rows(found, name, game)
    return out


def choices_meet_their_rows(found: labels.Labelled, name: str, game: Any) -> list[Finding]:
    """Each choice, best or not, against what it leads to where the set knows it without a
    solve: a successor that ends the game is worth its final score, one that is itself a row
    of the set is worth that row's value (1 - win, -diff). The Bellman residual reads a
    position's best choices only; this reads the others. A set whose record says it holds the
    successors of its first ``successors_of`` positions (the full game's GPU-made set: no CPU
    solve to compare with) must let every choice of at least that many positions meet its
    row."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    nxt, ids = found.next_id, found.state_id
    moves = nxt >= 0
    order = np.argsort(ids)
    at = order[np.minimum(np.searchsorted(ids[order], np.where(moves, nxt, 0)), len(ids) - 1)]
    row = moves & (ids[at] == nxt)
    ended = np.zeros_like(moves)
    rest = moves & ~row
    if rest.any():
        ended[rest] = game.terminal_mask(pairs_of(game.r, nxt[rest]))
    out = []
    for objective, field in labels.FIELDS.items():
        offset = 1.0 if field == "win" else 0.0
        want = np.full(nxt.shape, np.nan)
        want[row] = offset - found.values[field][at[row]]
        if ended.any():
            finals = Knucklebones(KnuckleRules(found.columns, found.rows, found.faces, objective))
            want[ended] = offset - finals.final_values(pairs_of(game.r, nxt[ended]))
        met = row | ended
        allowed = 2 * bellman_allowance(found, field)
        worst = float(np.abs(found.choices[field][met] - want[met]).max(initial=0.0))
        out.append(Finding(
            name, f"each choice's {field} that ends the game or leads to a row of the set "
            "equals its value there", worst <= allowed,
            f"largest difference {worst:.3g}, allowed {allowed:.3g}", int(met.sum()),
        ))  # fmt: skip
    promised = int(found.meta.get("successors_of", 0))
    if promised:
        whole = int(((row | ended) == moves).all(axis=1).sum())
        out.append(Finding(
            name, f"every choice of {promised:,} positions meets its row or the game's end",
            whole >= promised, f"{whole:,} positions", whole,
        ))  # fmt: skip
    return out


#: Exact values of a board, by objective (``wins``, ``score``) and state id; None for a board
#: too big to solve on a CPU (the full game): what :func:`check_packaged` compares every value
#: of an artefact with.
ExactValues = Callable[[KnuckleRules], "dict[str, np.ndarray] | None"]
#: A packaged artefact's name: its board, then its kind (``3x2-d6-book.npz``).
NAMED = re.compile(r"(\d+)x(\d+)-d(\d+)(-book\.npz|-labelled\.parquet|\.npz)")
#: Each kind by its name's ending.
KIND_OF = {"-book.npz": "book", "-labelled.parquet": "labelled", ".npz": "evaluator"}


def check_packaged(models: Path | None = None, exact: ExactValues | None = None) -> list[Finding]:
    """Every packaged evaluator, book and labelled set checked: readable as its kind and of the
    board its name says (:mod:`pipeline.games.knucklebones.players.contents`), then the
    contract (:func:`check_book`, :func:`check_labelled`) and, with ``exact``, every value (a
    book's entries, a labelled position's value and each of its choices, best or not) against
    an exact solve of its board (:func:`check_exact`); the full game's, until its GPU call has
    made them, reported absent."""
    folder = models or artefacts.MODELS
    out: list[Finding] = []
    files = sorted(p for p in folder.iterdir() if p.suffix in (".npz", ".parquet")) if (
        folder.is_dir()) else []  # fmt: skip
    solved: dict[KnuckleRules, dict[str, np.ndarray] | None] = {}
    for path in files:
        named = NAMED.fullmatch(path.name)
        if named is None:
            example = "e.g. 3x2-d6-book.npz, 3x2-d6-labelled.parquet, 3x2-d6.npz"
            out.append(Finding(path.name, "named after its board and kind", False, example))
            continue
        kind = KIND_OF[named.group(4)]
        readable = f"a readable {KINDS[kind]} of the board its name says"
        try:
            board = KnuckleRules(int(named.group(1)), int(named.group(2)), int(named.group(3)))
            found = READERS[kind](path, board)
        except PipelineError as exc:  # damaged, foreign, out of range: a broken contract
            why = str(exc).removeprefix(f"{path} is ")  # the artefact is named already
            out.append(Finding(path.name, readable, False, why))
            continue
        out.append(Finding(path.name, readable, True))
        if kind == "evaluator":
            continue
        out += check_book(found, path.name) if kind == "book" else check_labelled(found, path.name)
        if exact is not None:
            if board not in solved:
                solved[board] = exact(board)
            out += check_exact(found, path.name, solved[board])
    full = KnuckleRules(*FULL_GAME)
    for path in (artefacts.path("book", full, folder), artefacts.path("labelled", full, folder)):
        if not path.exists():
            out.append(Finding(path.name, "not made yet", None,
                               "absent: the full game's GPU call makes it, "
                               "docs/knucklebones-full-game.md"))  # fmt: skip
    return out


#: The checked reader of each kind (board given: the one its name says).
READERS: dict[str, Callable[[Path, KnuckleRules], Any]] = {
    "book": artefacts.read_book,
    "labelled": artefacts.read_labelled,
    "evaluator": artefacts.read_evaluator,
}


def check_exact(
    found: Book | labels.Labelled, name: str, exact: dict[str, np.ndarray] | None
) -> list[Finding]:
    """Every value of a book or labelled set against the exact solve's (``exact``: by objective
    and state id; None: the board is too big for a CPU, said as skipped). A labelled choice is
    worth its successor's value seen from the other side (1 - win, -diff), so a corrupted
    non-best choice, which no Bellman residual sees, is caught here; so is a book entry that is
    no parent's best reply."""
    if exact is None:
        return [Finding(name, "every value equals an exact solve's", None,
                        "the board is too big to solve on a CPU")]  # fmt: skip
    tol = float(found.meta.get("tolerance", DEFAULT_TOLERANCE))
    rounding = _rounding(found.meta)
    out = []
    for objective, field in labels.FIELDS.items():
        truth = exact[objective]
        offset = 1.0 if field == "win" else 0.0
        if isinstance(found, Book):
            given, want = getattr(found, field), truth[found.state_id]
        else:
            moves = found.next_id >= 0
            given = np.concatenate([found.values[field], found.choices[field][moves]])
            want = np.concatenate([truth[found.state_id], offset - truth[found.next_id[moves]]])
        scale = max(1.0, float(np.abs(want).max(initial=0.0)))
        allowed = 2 * tol + 2 * rounding * scale + 1e-12 * scale
        worst = float(np.abs(given - want).max(initial=0.0))
        what = "entry" if isinstance(found, Book) else "position's and choice's"
        out.append(Finding(
            name, f"every {what} {field} equals an exact solve's", worst <= allowed,
            f"largest difference {worst:.3g}, allowed {allowed:.3g}", int(given.size),
        ))  # fmt: skip
    return out


def contract_results(found: list[Finding]) -> list[ContractResult]:
    """The findings as data contracts' results (:mod:`pipeline.analysis.contracts`): what
    `check-artefacts` prints and fails on as `verify` does."""
    import polars as pl

    from pipeline.analysis.contracts import ContractResult

    out = []
    for f in found:
        problems = [f.detail or "violated"] if f.ok is False else []
        out.append(ContractResult(
            "artefact", f.check, pl.DataFrame({"problem": problems}, schema={"problem": pl.String}),
            skipped=f.detail if f.ok is None else "", checked=f.checked,
            title=f"{f.artefact}: {f.check}" + (f" ({f.detail})" if f.detail and f.ok else ""),
        ))  # fmt: skip
    return out


#: The tolerance of a labelled set's values when its record names none (the exact solvers').
DEFAULT_TOLERANCE = 1e-11


def bellman_residual(labelled: labels.Labelled, name: str) -> np.ndarray:
    """|value - mean over dice of the best choice| of every position, in objective ``name``
    (``win`` or ``diff``): zero up to the values' tolerance for exact values."""
    f, c = labelled.faces, labelled.columns
    choice = labelled.choices[name].reshape(-1, f, c)
    best = np.nanmax(np.where(np.isnan(choice), -np.inf, choice), axis=2)
    return np.abs(labelled.values[name] - best.mean(axis=1))


def bellman_allowance(labelled: labels.Labelled, name: str) -> float:
    """How large :func:`bellman_residual` may be in objective ``name``: the value and the best
    choices are each within the record's ``tolerance`` of the exact ones (twice that), plus,
    in a compact file, half a float32 ulp of each (the largest magnitude's), plus float64
    rounding."""
    tol = float(labelled.meta.get("tolerance", DEFAULT_TOLERANCE))
    scale = max(
        1.0,
        float(np.abs(labelled.values[name]).max(initial=0.0)),
        float(np.nanmax(np.abs(labelled.choices[name]), initial=0.0)),
    )
    rounding = 2.0**-23 * scale if labelled.meta.get("compact") else 0.0
    return 2 * tol + rounding + 1e-12 * scale
