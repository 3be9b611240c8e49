"""The tie rule is written once (:mod:`pipeline.solve.tolerance`) and picks the same move in
plain Python, compiled, and in its array form."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.graph import Graph
from pipeline.solve import ties, tolerance
from pipeline.solve.value_iteration import solve_value_iteration
from tests.support.graphs import check_graph


@pytest.mark.parametrize("form", ["python", "compiled"])
def test_the_pick_is_the_largest_label_among_the_ties(form: str) -> None:
    pick = tolerance.pick if form == "python" else ties.pick
    best_of = tolerance.best_of if form == "python" else ties.best_of
    values = np.array([0.5, 0.75, 0.75 - 1e-13, np.nan, 0.75 - 1e-9, 0.75])
    labels = np.array([9, 1, 7, 8, 9, 3])
    top = best_of(values, 0, 6, True)
    assert top == 0.75
    assert pick(values, labels, 0, 6, top) == (2, 3)  # label 7 ties; 9s do not (one is NaN)
    assert pick(values, labels, 0, 2, best_of(values, 0, 2, True)) == (1, 1)
    assert best_of(values, 0, 6, False) == 0.5
    assert pick(values, labels, 3, 4, best_of(values, 3, 4, True)) == (-1, 0)  # no move
    # equal labels: the first (a Knucklebones column's lowest among equal facing pairs)
    assert pick(np.ones(3), np.array([2, 2, 1]), 0, 3, 1.0) == (0, 3)


def test_the_pick_reads_lists_as_the_answers_hold_them() -> None:
    values = [3.0, 3.0 + 1e-12, 2.0]
    assert tolerance.best_of(values, 0, 3, False) == 2.0
    assert tolerance.pick(values, [5, 4, 3], 0, 3, 3.0 + 1e-12) == (0, 2)


def test_the_array_form_picks_as_the_scalar_does() -> None:
    rng = np.random.default_rng(7)
    values = np.round(rng.random((200, 5)), 1) + rng.choice([0.0, 1e-14], (200, 5))
    values[rng.random((200, 5)) < 0.2] = np.nan
    labels = rng.integers(0, 4, (200, 5))
    best = np.array([tolerance.best_of(row, 0, 5, True) for row in values])
    scalar = [
        tolerance.pick(v, lab, 0, 5, b)[0] for v, lab, b in zip(values, labels, best, strict=True)
    ]
    assert tolerance.picks(values, labels, best).tolist() == scalar


def test_value_iteration_picks_the_better_choice_then_the_larger_on_a_tie() -> None:
    """State 0 rolls one die (choice 1: worth 1) or two (choice 2: worth 0.5); state 1 the
    same but both are worth 1 (a tie: the larger choice). Before the one pick rule the first
    choice seen left the running best at -inf, so every state took its largest choice."""
    one = np.array([1], dtype=np.int64)
    g = Graph(
        state_id=np.arange(4, dtype=np.int64),
        rank=np.array([2, 2, 0, 0], dtype=np.int64),
        terminal=np.array([np.nan, np.nan, 1.0, 0.5]),
        ch_state=np.array([0, 0, 1, 1]),
        ch_choice=np.array([1, 2, 1, 2]),
        ch_count=np.repeat(one, 4),
        ch_denom=np.repeat(one, 4),
        ch_node=np.array([0, 1, 2, 3]),
        node_state=np.array([0, 0, 1, 1]),
        node_roll=np.array([1, 2, 1, 2]),
        mv_node=np.array([0, 1, 2, 3]),
        mv_dst=np.array([2, 3, 2, 2]),
        mv_scale=np.ones(4),
        mv_offset=np.zeros(4),
        mv_label=np.zeros(4, dtype=np.int64),
        cyclic=True,
    )
    check_graph(g)
    sol = solve_value_iteration(g)
    assert sol.value[:2].tolist() == [1.0, 1.0]
    assert sol.choice[:2].tolist() == [1, 2]
