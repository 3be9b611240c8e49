"""`knucklebones check-artefacts` fails (exit 3) on any corrupted value (issue 48, item 8): a best
choice, a choice that is not best, a book entry with its parent in the book and one without, a
start value; and on a file that is damaged, of another board than its name says, or holds no
position. It checked each position against its best choice only: an independent check lowered
non-best choices and raised book entries that are no parent's best reply, even to 0 or 1, and
it passed. Every value is now compared with an exact solve of its board (a small board here,
solved in a second; the shipped 3x2 board's files against its own solve below)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from pipeline.analysis import knucklebones_artefacts as contract
from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import artefacts, labels, positions
from pipeline.games.knucklebones.players import book as book_module
from pipeline.store.files import write_file_atomic as save
from tests.conftest import invoke
from tests.support.knucklebones_exact import exact, lookups

SMALL = KnuckleRules(2, 2, 3)
PROVENANCE = {"device": "cpu (a test)", "code_hash": "x", "seconds": 1.0, "tolerance": 1e-11}


@cache
def made() -> tuple[book_module.Book, labels.Labelled]:
    game = Knucklebones(SMALL)
    found = positions.labelled_set(game, lookups(SMALL), 200, 150, 3)
    found.meta.update(PROVENANCE)
    return book_module.make(game, lookups(SMALL), 3, dict(PROVENANCE)), found


def solved(board: KnuckleRules) -> dict[str, np.ndarray] | None:
    return exact(board) if board == SMALL else None


def findings(folder: Path) -> dict[str, bool | None]:
    return {f"{f.artefact}: {f.check}": f.ok for f in contract.check_packaged(folder, solved)}


def failed(folder: Path) -> list[str]:
    return [name for name, ok in findings(folder).items() if ok is False]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    book, found = made()
    save(tmp_path / "2x2-d3-book.npz", artefacts.book_writer(book))
    save(tmp_path / "2x2-d3-labelled.parquet", artefacts.labelled_writer(found))
    return tmp_path


def test_the_small_boards_files_meet_the_contract(folder: Path) -> None:
    assert not failed(folder)
    found = findings(folder)
    assert found["2x2-d3-book.npz: every entry win equals an exact solve's"]
    assert found[
        "2x2-d3-labelled.parquet: every position's and choice's diff equals an exact solve's"
    ]


def _corrupt_book(pick: Callable[[book_module.Book, Knucklebones], int], field: str, value: float):
    def corrupt(folder: Path) -> None:
        book = artefacts.read_book(folder / "2x2-d3-book.npz")
        at = pick(book, Knucklebones(SMALL))
        getattr(book, field)[at] = value
        save(folder / "2x2-d3-book.npz", artefacts.book_writer(book))

    return corrupt


def _no_parents_best(book: book_module.Book, game: Knucklebones) -> int:
    """An entry that is no parent's best reply for any die, its parent's successors all in the
    book (so the Bellman equation of that parent reads, and never checks, it), and of the
    last placement (its own equation is not checked either)."""
    ids = book.state_id
    live = ids[~game.terminal_mask(pairs_of(game.r, ids))]
    succ = successor_ids(game.r, live).reshape(len(live), game.r.faces, game.r.columns)
    at = np.minimum(np.searchsorted(ids, np.maximum(succ, 0)), len(ids) - 1)
    whole = ((succ < 0) | (ids[at] == succ)).all(axis=(1, 2))
    succ, at = succ[whole], at[whole]
    win = np.where(succ >= 0, 1 - book.win[at], -np.inf)
    best = np.take_along_axis(succ, win.argmax(axis=2)[..., None], axis=2)
    others = np.setdiff1d(succ[succ >= 0], best)
    # of those, one of the last placement (its own successors not in the book): nothing but
    # an exact solve reads it
    last = set(ids[~np.isin(ids, live[whole])].tolist())
    return int(np.searchsorted(ids, next(i for i in others.tolist() if i in last)))


def _last_placement(book: book_module.Book, game: Knucklebones) -> int:
    """An entry whose successors are not in the book (its own Bellman equation is never
    checked): the last placement's."""
    return len(book) - 1


def _corrupt_choice(best: bool, value: float):
    def corrupt(folder: Path) -> None:
        found = artefacts.read_labelled(folder / "2x2-d3-labelled.parquet")
        choice = found.choices["win"]
        row = int(np.flatnonzero((~np.isnan(choice)).sum(axis=1) >= 4)[0])
        legal = np.flatnonzero(~np.isnan(choice[row]))
        at = legal[np.argmax(choice[row][legal])] if best else legal[np.argmin(choice[row][legal])]
        choice[row, at] = value
        save(folder / "2x2-d3-labelled.parquet", artefacts.labelled_writer(found))

    return corrupt


CORRUPTIONS = {
    "a book entry, no parent's best reply, raised to 1": _corrupt_book(
        _no_parents_best, "win", 1.0
    ),
    "a book entry of the last placement lowered to 0": _corrupt_book(_last_placement, "win", 0.0),
    "the start value": _corrupt_book(lambda b, g: 0, "diff", 0.5),
    "a labelled best choice": _corrupt_choice(True, 0.999),
    "a labelled choice that is not best, lowered to 0": _corrupt_choice(False, 0.0),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_every_kind_of_corrupted_value_fails(folder: Path, name: str) -> None:
    CORRUPTIONS[name](folder)
    assert failed(folder), name
    # through the command too: exit 3, as verify says it (the small board solved there)
    said = invoke(["knucklebones", "check-artefacts", "--models", folder, "-d", folder, "-q"])
    assert said.code == 3 and "contracts failed" in said.stderr, said.stdout


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda f: (f / "2x2-d3-book.npz").write_bytes(b"x" * 100), "cannot be read"),
        (lambda f: (f / "2x2-d3-book.npz").write_bytes(b""), "cannot be read"),
        (
            lambda f: shutil.copy(f / "2x2-d3-book.npz", f / "2x3-d3-book.npz"),
            "records the 2x2-d3 board, not 2x3-d3",
        ),
        (
            lambda f: save(
                f / "2x2-d3-labelled.parquet", artefacts.labelled_writer(made()[1].subset([]))
            ),
            "holds no position",
        ),
        (lambda f: (f / "notes.npz").write_bytes(b""), "named after its board"),
    ],
    ids=["truncated", "empty", "another board's", "no position", "a stray name"],
)
def test_a_damaged_or_foreign_file_fails_in_one_line(
    folder: Path, damage: Callable[[Path], object], words: str
) -> None:
    damage(folder)
    said = invoke(["knucklebones", "check-artefacts", "--models", folder, "--no-exact"])
    assert said.code == 3, said.stdout + said.stderr
    assert words in said.stdout and "internal error" not in said.stderr
    assert said.stderr.startswith("error: ") and said.stderr.count("\n") == 1


def test_the_shipped_3x2_artefacts_equal_an_exact_solve() -> None:
    """The 3x2 board's book (28,389 entries) and labelled set (2,579 positions, every choice)
    against its exact solve, through the command (1 to 3 minutes: the solve). 3x3-d4's run the
    same way (`stb-pipeline knucklebones check-artefacts`, a few minutes more)."""
    from pipeline.apps.knucklebones.distill import exact_values

    board = KnuckleRules(3, 2, 6)
    values = exact_values(board, None).values
    found = contract.check_packaged(None, lambda b: values if b == board else None)
    exacts = [f for f in found if "exact solve" in f.check and f.artefact.startswith("3x2")]
    assert len(exacts) == 4 and all(f.ok for f in exacts), [f.line() for f in exacts]
    assert not [f.line() for f in found if f.ok is False]


def test_without_a_solve_each_choice_meets_its_own_row() -> None:
    """The full game's GPU-made set has no CPU solve to be compared with: it holds the
    successors of its first held-out positions, so each of their choices, best or not, meets
    its own row (or the game's end), and a corrupted one fails with no solve at hand."""
    game = Knucklebones(SMALL)
    drawn = positions.positions(game, 100, 50, 3)
    ids, source, ply, roots = positions.with_successors(game, *drawn[:3], 20)
    found = labels.label(game, ids, source, ply, lookups(SMALL), {**PROVENANCE})
    found.meta["successors_of"] = roots
    names = {f.check: f.ok for f in contract.check_labelled(found, "l")}
    assert names[f"every choice of {roots:,} positions meets its row or the game's end"]
    assert all(ok for check, ok in names.items() if "each choice" in check)
    # a root's choice that is not its best, lowered: only its own row tells
    root = int(np.flatnonzero(labels.held_out(found.state_id) & (source != "successor"))[0])
    choice = found.choices["win"][root]
    legal = np.flatnonzero(~np.isnan(choice))
    choice[legal[np.argmin(choice[legal])]] -= 0.01
    failed = [f.check for f in contract.check_labelled(found, "l") if f.ok is False]
    assert failed == ["each choice's win that ends the game or leads to a row of the set equals "
                      "its value there"], failed  # fmt: skip
