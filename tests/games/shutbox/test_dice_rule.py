"""The rules' scalar functions (pipeline/games/shutbox/rules.py: the final score, the value of
ending, the dice rule) are written once and run two ways: compiled over every state of a graph,
and as plain Python for an answer's check over a small box (so that `serve` loads no numba).
Both give the same arrays, bit for bit, for every rule set."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.games.registry import get_variant
from pipeline.games.shutbox import kernels
from pipeline.games.shutbox.game import PLAIN_STATES, RuleSet, ShutTheBox


def both(game: ShutTheBox, ids: np.ndarray) -> None:
    plain = game.state_rules(ids)
    compiled = kernels.state_rules(ids, game.rule_vector)
    for a, b in zip(plain, compiled, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    "name",
    ["classic", "classic-score", "lever", "one-die-6", "one-die-6-max2", "six-tiles-one-die",
     "twelve-tiles", "digital-score"],
)  # fmt: skip
def test_plain_and_compiled_rules_agree(name: str) -> None:
    game = get_variant(name).make()
    assert isinstance(game, ShutTheBox)
    ids = np.arange(1 << game.r.tiles, dtype=np.int64)
    assert ids.shape[0] <= PLAIN_STATES  # the plain path is the one taken
    both(game, ids)


def test_a_target_and_a_box_past_the_plain_limit() -> None:
    rules = RuleSet(tiles=10, objective="target", target=12, one_die="forced", one_die_sum=6)
    game = ShutTheBox(rules)
    both(game, np.arange(1 << 10, dtype=np.int64))
    big = ShutTheBox(RuleSet(tiles=14, one_die="optional", one_die_sum=6, objective="score"))
    ids = np.arange(1 << 14, dtype=np.int64)
    assert ids.shape[0] > PLAIN_STATES
    found = big.state_rules(ids)  # compiled
    small = big.state_rules(ids[:PLAIN_STATES])  # plain
    for a, b in zip(small, found, strict=True):
        assert a.tobytes() == b[:PLAIN_STATES].tobytes()
