"""Published values of one-player Shut the Box, derived from the rules.

Sources: seed 000 (000_9b8fddd618491a4c.txt, the Scala solver: P(win) 7.143 %, top states,
best opening rolls, 4,040 (state, roll) pairs); seed 003 (003_d76d08da6ac0702b.txt, the Lever Box:
0.0976137161704); ../shared/PUBLISHED.md (Durango Bill, The Fiddler) for the other rule sets.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pipeline.errors import UsageError
from pipeline.games.shutbox.game import RuleSet, ShutTheBox
from pipeline.solve.exact import solve_exact
from pipeline.solve.rank_order import best_moves, solve_rank_order
from tests.support import reference
from tests.support.graphs import check_graph

TOL = 1e-12
FULL = frozenset(range(1, 10))


def solved(rules: RuleSet) -> tuple[ShutTheBox, dict[int, float]]:
    """The game and its float values by state id."""
    game = ShutTheBox(rules)
    g = game.graph()
    check_graph(g)
    sol = solve_rank_order(g)
    return game, dict(zip(g.state_id.tolist(), sol.value.tolist(), strict=True))


def mask(tiles: str) -> int:
    return sum(1 << (int(t) - 1) for t in tiles)


def test_classic_start_matches_seed_000_and_exact_fraction() -> None:
    # seed 000_9b8fddd618491a4c.txt: "True probability 7.143"
    _, values = solved(RuleSet())
    assert values[511] == pytest.approx(0.07143162230560597, abs=TOL)
    assert round(values[511] * 100, 3) == pytest.approx(7.143, abs=1e-9)
    g = ShutTheBox(RuleSet()).graph()
    exact = dict(zip(g.state_id.tolist(), solve_exact(g), strict=True))
    assert exact[511] == Fraction(466473281, 6530347008)


@pytest.mark.parametrize(
    ("tiles", "fraction", "seed_value"),
    [
        ("124", Fraction(59, 324), 0.18209876543209874),
        ("34", Fraction(19, 108), 0.1759259259259259),
        ("125", Fraction(103, 648), 0.15895061728395063),
        ("134", Fraction(205, 1296), 0.15817901234567902),
        ("25", None, 0.1728395061728395),
        ("7", None, 0.16666666666666666),
        ("1234", None, 0.14744084362139914),
    ],
)
def test_classic_top_states_from_seed_000(
    tiles: str, fraction: Fraction | None, seed_value: float
) -> None:
    # seed 000_9b8fddd618491a4c.txt: the "top states" listing
    _, values = solved(RuleSet())
    assert values[mask(tiles)] == pytest.approx(seed_value, abs=TOL)
    if fraction is not None:
        assert values[mask(tiles)] == pytest.approx(float(fraction), abs=TOL)


SEED_000_OPENING = {
    9: 0.10150185360563307,
    8: 0.0843992883264558,
    12: 0.0797040646327626,
    11: 0.0727007112207658,
    7: 0.07125306992568319,
    10: 0.06943424590523688,
    6: 0.06499269203919156,
    5: 0.06108456955064155,
    4: 0.05532663847072549,
    3: 0.05106821208604296,
    2: 0.045189824620113055,
}


def test_classic_best_opening_rolls_from_seed_000() -> None:
    # seed 000_9b8fddd618491a4c.txt: value after the best first move, for each roll
    game = ShutTheBox(RuleSet())
    g = game.graph()
    sol = solve_rank_order(g)
    start = int(np.flatnonzero(g.state_id == 511)[0])
    nodes = np.flatnonzero(g.node_state == start)
    got = {int(g.node_roll[n]): float(sol.node_value[n]) for n in nodes}
    assert got.keys() == SEED_000_OPENING.keys()
    for roll, value in SEED_000_OPENING.items():
        assert got[roll] == pytest.approx(value, abs=TOL), roll
    best, _ = best_moves(g, sol)
    by_roll = {int(g.node_roll[n]): int(g.mv_label[best[n]]) for n in nodes}
    assert by_roll[9] == mask("9")
    assert by_roll[2] == mask("2")


def test_classic_has_4040_state_roll_pairs_with_a_move() -> None:
    # seed 000_9b8fddd618491a4c.txt: "we are left with 4,040 valid state and roll pairs"
    g = ShutTheBox(RuleSet()).graph()
    assert np.unique(g.mv_node[g.mv_label >= 0]).shape[0] == 4040


def test_seed_000_prefers_34_over_25_on_seven_from_12345() -> None:
    # seed 000: "if we have the tiles 1 through 5 open and we roll a 7, ... close 3 and 4"
    g = ShutTheBox(RuleSet()).graph()
    sol = solve_rank_order(g)
    best, n_optimal = best_moves(g, sol)
    start = int(np.flatnonzero(g.state_id == mask("12345"))[0])
    node = int(np.flatnonzero((g.node_state == start) & (g.node_roll == 7))[0])
    assert g.mv_label[best[node]] == mask("34")
    assert n_optimal[node] == 1


def test_lever_matches_seed_003() -> None:
    # seed 003_d76d08da6ac0702b.txt: P(000000000) ~ 0.0976137161704
    _, values = solved(RuleSet(one_die="optional", one_die_shut=(7, 8, 9)))
    assert values[511] == pytest.approx(0.0976137161704, abs=5e-14)


@pytest.mark.parametrize(
    ("rules", "published", "tol"),
    [
        # PUBLISHED.md (Durango Bill; UnaryPlus): 1d<=6, 9.7614 %, exactly 956177159/9795520512
        (RuleSet(one_die="forced", one_die_sum=6), 956177159 / 9795520512, TOL),
        (RuleSet(one_die="optional", one_die_sum=6), 956177159 / 9795520512, TOL),
        # PUBLISHED.md (Durango Bill): 1d<=6 and at most two tiles per roll, 7.4194 %
        (RuleSet(one_die="forced", one_die_sum=6, max_per_move=2), 0.074194, 5e-7),
        # PUBLISHED.md (The Fiddler, 13 Sep 2024): six tiles, always one die, 145/1944
        (RuleSet(tiles=6, dice=1), 145 / 1944, TOL),
        # PUBLISHED.md (arcini citing Durango Bill): 12 tiles, two dice, 0.36 %
        (RuleSet(tiles=12), 0.0036, 5e-5),
    ],
)
def test_published_rule_variants(rules: RuleSet, published: float, tol: float) -> None:
    game, values = solved(rules)
    assert values[game.full] == pytest.approx(published, abs=tol)


def test_fiddler_six_tiles_exact() -> None:
    # PUBLISHED.md: The Fiddler's 145/1944, exactly
    g = ShutTheBox(RuleSet(tiles=6, dice=1)).graph()
    exact = dict(zip(g.state_id.tolist(), solve_exact(g), strict=True))
    assert exact[63] == Fraction(145, 1944)


def test_target_reachable_despite_a_tile_no_roll_shuts() -> None:
    """Issue 26: tile 7 of a one-die box is never shut, so the score is at least 7, and
    P(score <= 7) is P(shutting tiles 1..6 with one die): The Fiddler's 145/1944, exactly. A
    target below 7 cannot be met, and is refused (as objective 'shut' is)."""
    g = ShutTheBox(RuleSet(tiles=7, dice=1, objective="target", target=7)).graph()
    exact = dict(zip(g.state_id.tolist(), solve_exact(g), strict=True))
    assert exact[127] == Fraction(145, 1944)
    for refused in ({"objective": "target", "target": 6}, {"objective": "shut"}):
        with pytest.raises(UsageError, match="tile 7 can never be shut"):
            RuleSet(tiles=7, dice=1, **refused)  # type: ignore[arg-type]


def test_classic_score_cross_checked_two_independent_ways() -> None:
    # The minimum expected final score has no published figure: derive it three ways.
    game, values = solved(RuleSet(objective="score"))
    g = game.graph()
    exact = dict(zip(g.state_id.tolist(), solve_exact(g), strict=True))
    ref = reference.solver(reference.open_sum, lambda _: [2], maximise=False)
    independent = ref(FULL)
    assert exact[511] == independent
    assert values[511] == pytest.approx(float(independent), abs=TOL)
    assert 11.0 < values[511] < 11.3


def test_reference_solver_agrees_state_by_state_with_lever_rules() -> None:
    _game, values = solved(RuleSet(one_die="optional", one_die_shut=(7, 8, 9)))

    def dice(open_tiles: frozenset[int]) -> list[int]:
        return [1, 2] if not open_tiles & {7, 8, 9} else [2]

    ref = reference.solver(reference.shut, dice)
    for state_id, value in values.items():
        tiles = frozenset(t for t in range(1, 10) if state_id >> (t - 1) & 1)
        assert value == pytest.approx(float(ref(tiles)), abs=TOL), tiles


def test_target_objective_brackets_shut_probability() -> None:
    # P(score <= 0) is P(shut); P(score <= k) grows with k and reaches 1 at the top score.
    _, shut_values = solved(RuleSet())
    _, zero = solved(RuleSet(objective="target", target=0))
    assert zero[511] == pytest.approx(shut_values[511], abs=TOL)
    previous = 0.0
    for k in (0, 3, 10, 20, 44):
        _, v = solved(RuleSet(objective="target", target=k))
        assert v[511] >= previous - TOL
        previous = v[511]
    # every first roll has a move from the full box, so the top score 45 never happens
    assert previous == pytest.approx(1.0, abs=TOL)


def test_digital_score_matches_reference() -> None:
    _game, values = solved(
        RuleSet(one_die="forced", one_die_sum=6, objective="score", scoring="digital")
    )

    def digital(open_tiles: frozenset[int]) -> Fraction:
        return Fraction(int("".join(str(t) for t in sorted(open_tiles)) or "0"))

    ref = reference.solver(digital, lambda o: [1] if sum(o) <= 6 else [2], maximise=False)
    assert values[511] == pytest.approx(float(ref(FULL)), rel=1e-12)
