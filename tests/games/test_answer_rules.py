"""The rules each game gives the answers (issue 30): for every state, the legal moves of every
roll, the dice and their rolls, the texts and the fields are those of the game's own graph and
description (the numpy and polars forms the build writes), so an answer that lists moves from
the rules ranks exactly the moves the tables hold."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from pipeline.games.registry import get_variant
from pipeline.graph import PASS

#: One variant of every rule the families have: a roll of two dice, a choice of dice, a forced
#: die, a cap on tiles a move, the digital score, two rows of tiles, two players in turn.
VARIANTS = ["classic", "lever", "one-die-6-max2", "digital-score", "double-shutter", "two-player"]


#: States checked per variant (drawn with a fixed seed), and the seed.
SAMPLE, SEED = 300, 30


def sample_ids(game) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``SAMPLE`` state ids of the game's graph (all of them when fewer), increasing."""
    ids = np.sort(game.graph().state_id).astype(np.int64)
    if ids.shape[0] <= SAMPLE:
        return ids
    return np.sort(np.random.default_rng(SEED).choice(ids, SAMPLE, replace=False))


def graph_moves(game, wanted: np.ndarray) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """From the game's graph, for the states ``wanted``: (state id -> {roll: [(label, next
    id), ...]}) of the legal moves, and (state id -> {dice: [(roll, probability), ...]}) of
    the chance rows."""
    g = game.graph()
    ids = g.state_id
    index = np.flatnonzero(np.isin(ids, wanted))
    moves: dict[int, dict[int, list]] = defaultdict(dict)
    starts = g.move_starts()
    for node in np.flatnonzero(np.isin(g.node_state, index)).tolist():
        state, roll = int(ids[g.node_state[node]]), int(g.node_roll[node])
        listed = moves[state].setdefault(roll, [])
        for m in range(starts[node], starts[node + 1]):
            if g.mv_label[m] != PASS:
                listed.append((int(g.mv_label[m]), int(ids[g.mv_dst[m]])))
    chances: dict[int, dict[int, list]] = defaultdict(dict)
    for row in np.flatnonzero(np.isin(g.ch_state, index)).tolist():
        state, dice = int(ids[g.ch_state[row]]), int(g.ch_choice[row])
        roll = int(g.node_roll[g.ch_node[row]])
        chances[state].setdefault(dice, []).append((roll, float(g.ch_prob[row])))
    return moves, chances


@pytest.mark.parametrize("name", VARIANTS)
def test_the_rules_list_the_graphs_moves(name: str) -> None:
    game = get_variant(name).make()
    wanted = sample_ids(game)
    moves, chances = graph_moves(game, wanted)
    for state in wanted.tolist():
        by_roll = moves.get(state, {})
        allowed = {
            d: [(t, ways / denom) for t, ways, denom in dist]
            for d, dist in game.roll_chances(state)
        }
        assert allowed == chances.get(state, {}), (name, state)  # none where nothing is rolled
        rolls = sorted(by_roll)
        found = game.legal_moves(state, rolls)
        listed: dict[int, list] = {r: [] for r in rolls}
        for r, label, nxt in zip(
            found.roll.tolist(), found.label.tolist(), found.next.tolist(), strict=True
        ):
            listed[r].append((label, nxt))
        for r in rolls:
            assert listed[r] == sorted(by_roll[r], reverse=True), (name, state, r)


@pytest.mark.parametrize("name", VARIANTS)
def test_texts_and_fields_are_the_descriptions(name: str) -> None:
    game = get_variant(name).make()
    ids = sample_ids(game)
    described = game.describe_states(ids)
    assert [game.state_text(int(s)) for s in ids] == described["tiles"].to_list()
    if "state" in described.columns:
        assert [game.state_code(int(s)) for s in ids] == described["state"].to_list()
    fields = game.position_fields(ids)
    for k, s in enumerate(ids.tolist()):
        one = game.state_fields(s)
        assert {f: (int(v[k]) or None) for f, v in fields.items()} == one
    labels = np.unique(game.graph().mv_label)
    labels = labels[labels != PASS]
    assert [game.move_tiles(int(x)) for x in labels] == game.describe_moves(labels).to_list()


@pytest.mark.parametrize("name", ["classic", "digital-score", "double-shutter", "lever"])
def test_a_stuck_roll_ends_with_the_games_own_value(name: str) -> None:
    game = get_variant(name).make()
    ids = np.sort(game.graph().state_id).astype(np.int64)  # every state
    expected = game.stuck_values(ids).tolist()
    assert [game.stuck(int(s)).value for s in ids] == expected
    assert all(game.stuck(int(s)).kind == "end" for s in ids[:50])


@pytest.mark.parametrize(
    "options",
    [
        {"objective": "shut"},
        {"objective": "target", "target": 7, "columns": 6},
        {"back_row": False, "columns": 7, "front_weight": 3},
    ],
)
def test_a_double_shutter_stuck_roll_ends_with_the_games_own_value_under_every_objective(
    options: dict,
) -> None:
    """The one-state stuck value (plain Python, for the answers) is the numpy form's on every
    state, for the objectives and rows the named variant does not have."""
    from pipeline.games.double_shutter.game import DoubleShutter, DoubleShutterRules

    game = DoubleShutter(DoubleShutterRules(**options))
    ids = np.sort(game.graph().state_id).astype(np.int64)
    assert [game.stuck(int(s)).value for s in ids] == game.stuck_values(ids).tolist()
    assert [game.state_text(int(s)) for s in ids] == game.describe_states(ids)["tiles"].to_list()
