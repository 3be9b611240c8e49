"""Labelled positions, the distilled evaluator, the opening book and players rated against exact
play (issue 42), on boards small enough to solve exactly in a test.

Rules: seed 004_4436d6a68a1265db.txt and seeds/README.md (Cult of the Lamb).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from pipeline.analysis import knucklebones_artefacts as contract
from pipeline.apps.knucklebones.rating import decisions, rate
from pipeline.games.knucklebones.exact.cpu import pairs_of
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import artefacts, labels, positions
from pipeline.games.knucklebones.players import book as book_module
from pipeline.games.knucklebones.players import evaluator as evaluator_module
from pipeline.games.knucklebones.players.evaluator import net_leaf
from pipeline.games.knucklebones.players.search import NET, Searcher
from pipeline.games.knucklebones.players.training import Settings, examples, fit
from pipeline.store.files import write_file_atomic as save
from tests.support.knucklebones_exact import exact, lookups

SMALL = KnuckleRules(2, 2, 3)


@cache
def labelled(games: int = 300, uniform: int = 200, seed: int = 3) -> labels.Labelled:
    return positions.labelled_set(Knucklebones(SMALL), lookups(SMALL), games, uniform, seed)


def test_labelled_values_obey_the_bellman_equation_among_themselves() -> None:
    found = labelled()
    assert len(found) > 100 and {"play", "uniform"} <= set(found.source.tolist())
    for name in ("win", "diff"):
        # each position's value is the mean over dice of its best choice (values within 1e-12)
        assert contract.bellman_residual(found, name).max() < 1e-9
    # a choice that is no move has no value, and every position has a move for every die
    assert np.array_equal(np.isnan(found.choices["win"]), found.next_id < 0)
    assert (found.next_id.reshape(len(found), 3, 2) >= 0).any(axis=2).all()


def test_a_choice_is_worth_its_successor_seen_from_the_other_side() -> None:
    found = labelled()
    v = exact(SMALL)
    legal = found.next_id >= 0
    assert np.allclose(found.choices["win"][legal], 1 - v["wins"][found.next_id[legal]])
    assert np.allclose(found.choices["diff"][legal], -v["score"][found.next_id[legal]])
    assert np.allclose(found.values["win"], v["wins"][found.state_id])


def test_positions_from_play_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    g = Knucklebones(SMALL)
    a, plies = positions.play_positions(g, 50, 11)
    b, _ = positions.play_positions(g, 50, 11)
    c, _ = positions.play_positions(g, 50, 12)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert plies[0] == 0 and a[0] == g.start_state()  # every game starts on empty boards
    assert not g.terminal_mask(pairs_of(SMALL, a)).any()  # positions before a roll: in play


def test_held_out_is_a_fixed_tenth_by_state_id_and_never_a_training_example() -> None:
    ids = np.arange(200_000)
    share = labels.held_out(ids).mean()
    assert 0.09 < share < 0.11
    assert np.array_equal(labels.held_out(ids), labels.held_out(ids.copy()))
    train_ids, _, _ = examples(labelled())
    assert not labels.held_out(train_ids).any()
    held = positions.labelled_set(
        Knucklebones(SMALL), lookups(SMALL), 300, 0, 4, only_held_out=True
    )
    assert len(held) > 0 and labels.held_out(held.state_id).all()


def test_a_labelled_set_survives_its_file(tmp_path: Path) -> None:
    found = labelled()
    save(tmp_path / "l.parquet", artefacts.labelled_writer(found))
    back = artefacts.read_labelled(tmp_path / "l.parquet")
    assert np.array_equal(back.state_id, found.state_id)
    assert np.array_equal(back.next_id, found.next_id)
    for name in ("win", "diff"):
        assert np.allclose(back.values[name], found.values[name], atol=1e-15)
        assert np.allclose(back.choices[name], found.choices[name], equal_nan=True)
    assert back.meta["seed"] == 3 and back.meta["faces"] == 3
    (tmp_path / "other.parquet").write_bytes((tmp_path / "l.parquet").read_bytes()[:100])
    with pytest.raises(Exception):  # noqa: B017 (pyarrow's own error for a cut file)
        artefacts.read_labelled(tmp_path / "other.parquet")


@cache
def fitted(epochs: int = 3) -> evaluator_module.Evaluator:
    return fit(Knucklebones(SMALL), labelled(), Settings(embed=16, phi=16, hidden=(16, 8),
               epochs=epochs, batch=64, seed=5))  # fmt: skip


def test_fitting_learns_and_is_reproducible() -> None:
    errors: list[float] = []
    g = Knucklebones(SMALL)
    settings = Settings(embed=16, phi=16, hidden=(16, 8), epochs=20, batch=32, seed=5)
    a = fit(g, labelled(), settings, report=lambda _, err: errors.append(err))
    b = fit(g, labelled(), settings)
    assert errors[-1] < errors[0] / 2  # the win chance's error falls as it learns
    for name in evaluator_module.ARRAYS:
        assert np.array_equal(a.arrays[name], b.arrays[name])  # same seed, same weights


def test_the_compiled_leaf_is_the_numpy_evaluator(tmp_path: Path) -> None:
    ev = fitted()
    g = Knucklebones(SMALL)
    pairs = pairs_of(SMALL, np.arange(0, g.n_states, 7))
    win, diff = ev.values(g.t, pairs)
    packed = ev.packed(g.t)
    for k in range(0, len(pairs), 13):
        w, d = net_leaf(pairs[k], g.t.mover_size, g.t.opp_size, packed)
        assert w == pytest.approx(win[k], abs=1e-12) and d == pytest.approx(diff[k], abs=1e-9)
    save(tmp_path / "m.npz", artefacts.evaluator_writer(ev))
    back = artefacts.read_evaluator(tmp_path / "m.npz")
    win2, _ = back.values(g.t, pairs)
    assert np.array_equal(win2, win)  # float32 weights, the same before and after saving
    (tmp_path / "x.npz").write_bytes(b"not a model")
    with pytest.raises(Exception):  # noqa: B017 (numpy's error for a file that is not npz)
        artefacts.read_evaluator(tmp_path / "x.npz")


def test_the_search_with_the_evaluator_is_exact_where_every_line_ends() -> None:
    g = Knucklebones(SMALL)
    v = exact(SMALL)
    searcher = Searcher(g, evaluator=fitted())
    # the mover has one slot left: every move fills the board and ends the game
    ids = np.flatnonzero(
        (g.t.mover_size[g.positions].sum(1) == 3) & (g.t.opp_size[g.positions].sum(1) < 4)
    )
    for s in ids[:40]:
        ev = searcher.evaluate(g.positions[s].astype(np.int64), 1, NET)
        assert ev.exact and ev.win == pytest.approx(v["wins"][s], abs=1e-9)
    with pytest.raises(ValueError, match="no evaluator"):
        Searcher(g).evaluate(g.positions[0].astype(np.int64), 1, NET)


def test_ratings_price_a_perfect_player_at_zero_and_greedy_above() -> None:
    g = Knucklebones(SMALL)
    v = exact(SMALL)
    held = positions.labelled_set(g, lookups(SMALL), 400, 0, 9, only_held_out=True)
    found = decisions(g, held, 0, 1)
    assert len(found) > 20

    def perfect(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        values = [
            (1 - v["wins"][g.state_of(after)], -col) for col, after in g.successors(pairs, face)
        ]
        return -max(values)[1]

    best = rate("perfect", perfect, found, 0)
    assert best.optimal == 1.0 and best.mean_regret == pytest.approx(0, abs=1e-12)

    def first(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        return int(g.legal_columns(pairs)[0])

    worst = rate("first", first, found, 0)
    assert worst.optimal < 1.0 and worst.mean_regret > 0 and worst.max_regret > 0


def test_the_book_holds_every_position_within_its_plies() -> None:
    g = Knucklebones(SMALL)
    made = book_module.make(g, lookups(SMALL), 3, {"source": "test"})
    assert made.values(np.array([0])) is not None
    # every successor of a position one placement in is in the book; three in, not all
    one = book_module.reachable(g, 1)
    two = book_module.reachable(g, 2)
    assert set(one.tolist()) < set(two.tolist()) <= set(made.state_id.tolist())
    win, _diff = made.values(two)
    assert np.allclose(win, exact(SMALL)["wins"][two])
    assert made.values(np.array([g.n_states - 1])) is None or g.n_states - 1 in made.state_id
