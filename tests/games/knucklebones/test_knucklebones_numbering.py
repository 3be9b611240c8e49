"""The plain-Python numbering of Knucklebones positions (`numbering.py`) against the numpy
numbering the game used before it (kept here as the reference: the column order by lexsort,
the pairs by lexsort over numpy's disjointness test, the colex rank over a binomial table):
the same columns, the same pairs and the same state id for every state of small boards and a
sample of the large ones, bit for bit."""

from __future__ import annotations

import random
import subprocess
import sys
from itertools import combinations_with_replacement

import numpy as np
import pytest

from pipeline.games.knucklebones.game import (
    Knucklebones,
    KnuckleRules,
    PairTables,
    all_multisets,
    binomials,
    n_positions,
    rank_multisets,
)
from pipeline.games.knucklebones.numbering import column_order, pair_order, rank
from tests.conftest import REPO


def numpy_columns(rows: int, faces: int) -> np.ndarray:
    """The column order as the game wrote it before (counts per face, lexsort)."""
    slots = combinations_with_replacement(range(faces + 1), rows)
    counts = np.array([np.bincount(s, minlength=faces + 1)[:faces] for s in slots], np.int64)
    return counts[np.lexsort((*counts.T[::-1], counts.sum(1)))]


def numpy_pairs(rows: int, faces: int) -> tuple[np.ndarray, np.ndarray]:
    """The facing-pair order as the game wrote it before (mover, opponent column indices)."""
    counts = numpy_columns(rows, faces)
    size = counts.sum(1)
    a, b = np.nonzero(((counts[:, None, :] > 0) & (counts[None] > 0)).sum(2) == 0)
    order = np.lexsort((b, a, size[a] + size[b]))
    return a[order], b[order]


SHAPES = [(r, f) for r in range(1, 5) for f in (2, 4, 6, 9)]


@pytest.mark.parametrize(("rows", "faces"), SHAPES)
def test_the_columns_and_pairs_are_the_numpy_order(rows: int, faces: int) -> None:
    assert np.array_equal(np.array(column_order(rows, faces)), numpy_columns(rows, faces))
    mover, opp = numpy_pairs(rows, faces)
    plain = np.array(pair_order(rows, faces)).reshape(-1, 2)
    assert np.array_equal(plain[:, 0], mover) and np.array_equal(plain[:, 1], opp)
    t = PairTables(rows, faces)  # built from the plain order
    assert np.array_equal(t.pair_mover, mover) and np.array_equal(t.pair_opp, opp)


#: States of a board read back from their text by both readers, the first and last included
#: (every state is ranked both ways: reading all 127,765 of the 2x2 board took 16 s).
READ_BACK = 2000


def check_ids(game: Knucklebones, ids: list[int]) -> None:
    """Each state's id: the plain rank of its pairs in shuffled order and the numpy rank, equal
    to the id; and for :data:`READ_BACK` of them, the board text read back by the plain reader
    and by the game."""
    rnd = random.Random(len(ids))
    pos = game.positions[ids] if ids else game.positions
    numpy_ids = rank_multisets(np.sort(pos, axis=1), binomials(game.t.n_pairs + 4, 4))
    assert numpy_ids.tolist() == ids
    read = set(rnd.sample(range(len(ids)), min(READ_BACK, len(ids)))) | {0, len(ids) - 1}
    for k, (state_id, pairs) in enumerate(zip(ids, pos.tolist(), strict=True)):
        rnd.shuffle(pairs)
        assert rank(pairs) == state_id
        if k in read:
            assert game.numbering.parse_state(game.board_text(np.array(pairs))) == state_id
            assert game.parse_state(game.board_text(np.array(pairs))) == state_id


def test_every_state_of_the_small_boards() -> None:
    for cols, rows in ((2, 2), (1, 3), (3, 1)):
        game = Knucklebones(KnuckleRules(cols, rows, 6))
        check_ids(game, list(range(game.n_states)))


@pytest.mark.parametrize(("cols", "rows", "faces"), [(3, 3, 4), (2, 3, 6), (3, 2, 6)])
def test_a_sample_of_the_larger_boards(cols: int, rows: int, faces: int) -> None:
    game = Knucklebones(KnuckleRules(cols, rows, faces))
    ids = sorted(random.Random(cols * rows * faces).sample(range(game.n_states), 3000))
    check_ids(game, [0, *ids, game.n_states - 1])


def test_a_sample_of_the_full_game() -> None:
    """The full 3x3 game (its states are not all made: the numpy rank of sampled pair rows)."""
    rules = KnuckleRules()
    n_pairs = len(pair_order(rules.rows, rules.faces))
    binom = binomials(n_pairs + 3, 3)
    rnd = random.Random(3)
    rows = np.sort(np.array([[rnd.randrange(n_pairs) for _ in range(3)] for _ in range(5000)]), 1)
    rows = np.vstack([rows, [[0, 0, 0], [n_pairs - 1] * 3]])
    numpy_ids = rank_multisets(rows, binom).tolist()
    assert numpy_ids[-1] == n_positions(n_pairs, 3) - 1
    assert [rank(r) for r in rows.tolist()] == numpy_ids
    # and the colex order itself: the first multisets of all_multisets, ranked 0, 1, 2, ...
    first = all_multisets(40, 3)
    assert [rank(r) for r in first.tolist()] == list(range(first.shape[0]))


def test_the_numbering_loads_no_numpy() -> None:
    code = (
        "import sys\n"
        "from pipeline.games.knucklebones.numbering import KnuckleRules, Numbering\n"
        "print(Numbering(KnuckleRules()).parse_state('44_/1__/___;_/3/'))\n"
        "print('numpy' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == [
        str(Knucklebones(KnuckleRules()).numbering.parse_state("44/1/;_/3/")),
        "False",
    ]
