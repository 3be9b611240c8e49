"""Policy evaluation: backward values, forward reach, and their cross-checks against the solver."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.games.registry import REGISTRY, get_variant
from pipeline.games.shutbox import strategies
from pipeline.solve import policy_eval
from pipeline.solve.rank_order import best_moves, solve_rank_order
from pipeline.solve.value_iteration import solve_value_iteration


def solved(name: str):
    """Game, graph, solution and start index of a registered variant."""
    game = get_variant(name).make()
    g = game.graph()
    start = int(np.flatnonzero(g.state_id == game.start_state())[0])
    return game, g, solve_rank_order(g), start


def close(a: np.ndarray, b: np.ndarray, rel: float = 1e-12) -> bool:
    """Equal within ``rel``, relative to max(1, |b|)."""
    return bool(np.all(np.abs(a - b) <= rel * np.maximum(1.0, np.abs(b))))


@pytest.mark.parametrize("name", [v.name for v in REGISTRY.values() if v.in_all])
def test_optimal_policy_has_the_solvers_value_at_every_state(name: str) -> None:
    g = get_variant(name).make().graph()
    if g.cyclic:  # Knucklebones: value iteration, no rank order to evaluate in
        sol = solve_value_iteration(g)
        with pytest.raises(ValueError, match="acyclic"):
            policy_eval.evaluate(g, policy_eval.optimal(g, sol))
        return
    _, g, sol, _ = solved(name)
    value = policy_eval.evaluate(g, policy_eval.optimal(g, sol))
    assert close(value.value, sol.value)
    assert close(value.node_value, sol.node_value)


def test_shut_and_score_graphs_share_structure_so_one_policy_gets_both_numbers() -> None:
    game, g_shut, sol, start = solved("classic")
    _, g_score, _, _ = solved("classic-score")
    assert policy_eval.same_structure(g_shut, g_score)
    view = strategies.tile_view(game, g_shut)
    features = strategies.move_features(g_shut, view, sol.choice)
    for strategy in strategies.STRATEGIES:
        policy = strategies.policy_for(strategy, g_shut, sol, features)
        reach = policy_eval.reach(g_shut, policy, start)
        p_shut = policy_eval.evaluate(g_shut, policy).value[start]
        e_score = policy_eval.evaluate(g_score, policy).value[start]
        # backward on each objective's graph == forward distribution of final states
        assert abs(p_shut - reach.end[view.score == 0].sum()) < 1e-12
        assert abs(e_score - reach.end @ view.score) < 1e-12 * e_score


def test_structure_differs_when_the_rules_differ() -> None:
    _, a, _, _ = solved("classic")
    _, b, _, _ = solved("lever")
    assert not policy_eval.same_structure(a, b)


@pytest.mark.parametrize("name", ["classic", "lever", "one-die-6-max2", "digital-score"])
def test_forward_pass_conserves_probability(name: str) -> None:
    _, g, sol, start = solved(name)
    policy = policy_eval.uniform(g, sol.choice)
    reach = policy_eval.reach(g, policy, start)
    assert reach.state[start] == 1.0
    assert abs(reach.end.sum() - 1.0) < 1e-12
    # every visited non-terminal state rolls once: its nodes' reach adds up to its own
    per_state = np.bincount(g.node_state, weights=reach.node, minlength=g.n_states)
    playing = np.isnan(g.terminal)
    assert close(per_state[playing], reach.state[playing])


@pytest.mark.parametrize("name", ["classic", "classic-score", "lever"])
def test_strategy_loss_is_the_sum_of_its_one_move_regrets(name: str) -> None:
    """Performance difference: V*(start) - V_greedy(start) = sum over nodes greedy reaches of
    P(reach node) x (value lost by greedy's move there, optimal play after)."""
    game, g, sol, start = solved(name)
    view = strategies.tile_view(game, g)
    features = strategies.move_features(g, view, sol.choice)
    greedy = strategies.policy_for(strategies.get_strategy("greedy"), g, sol, features)
    sign = 1.0 if g.maximise else -1.0
    regret = sign * (sol.node_value[g.mv_node] - sol.move_value)
    node_loss = np.bincount(g.mv_node, weights=greedy.move_prob * regret)
    reach = policy_eval.reach(g, greedy, start)
    gap = sign * (sol.value[start] - policy_eval.evaluate(g, greedy).value[start])
    assert gap > 0
    assert abs(reach.node @ node_loss - gap) < 1e-12 * max(1.0, abs(sol.value[start]))


def test_invalid_policies_are_rejected() -> None:
    _, g, sol, _ = solved("six-tiles-one-die")
    rows, _ = best_moves(g, sol)
    with pytest.raises(ValueError, match="sum to 1"):
        policy_eval.evaluate(g, policy_eval.Policy(np.zeros(g.mv_node.shape[0]), sol.choice))
    with pytest.raises(ValueError, match="choice"):
        no_choice = np.full(g.n_states, 7, dtype=np.int64)
        policy_eval.evaluate(g, policy_eval.deterministic(g, rows, no_choice))
    with pytest.raises(ValueError, match="one move row of each node"):
        policy_eval.deterministic(g, rows[::-1], sol.choice)


def test_batch_solve_on_a_rank_sorted_graph_matches_the_single_solve() -> None:
    """solve_rank_order_batch indexes layers, so a graph sorted by rank (slices) works too."""
    from pipeline.games.shutbox.game import RuleSet, ShutTheBox
    from pipeline.solve.batch import solve_rank_order_batch
    from pipeline.solve.rank_order import solve_rank_order

    g = ShutTheBox(RuleSet(objective="score")).graph()
    assert np.all(np.diff(g.rank) >= 0)
    single = solve_rank_order(g)
    ended = np.zeros((g.n_states, 1))
    passes = g.mv_dst < 0
    ended[g.node_state[g.mv_node[passes]], 0] = g.mv_offset[passes]
    batch = solve_rank_order_batch(g, g.terminal[:, None], ended)
    assert np.allclose(batch.value[:, 0], single.value, rtol=0, atol=1e-12)
    assert np.array_equal(batch.choice[:, 0], single.choice)


@pytest.mark.parametrize("name", ["lever", "two-player", "double-shutter"])
def test_policies_evaluated_together_equal_each_alone(name: str) -> None:
    """evaluate_many and reach_many (every strategy in one compiled pass, as `build` runs them)
    give each policy exactly the values and reach of its own pass: the same sums in the same
    order, so equality is bitwise, not within a tolerance."""
    game, g, sol, start = solved(name)
    view = strategies.tile_view(game, g)
    features = strategies.move_features(g, view, sol.choice) if view is not None else None
    if features is not None:
        picked = [strategies.policy_for(s, g, sol, features) for s in strategies.STRATEGIES]
    else:  # no tiles (two-player): the optimal and the uniformly random policy
        picked = [policy_eval.optimal(g, sol), policy_eval.uniform(g, sol.choice)]
    together = policy_eval.stack(g, picked)
    values = policy_eval.evaluate_many(g, together)
    reaches = policy_eval.reach_many(g, together, start)
    assert values.shape == (g.n_states, len(picked))
    for k, policy in enumerate(picked):
        alone = policy_eval.evaluate(g, policy)
        assert np.array_equal(values[:, k], alone.value)
        reach = policy_eval.reach(g, policy, start)
        assert np.array_equal(reaches[k].state, reach.state)
        assert np.array_equal(reaches[k].node, reach.node)
        assert np.array_equal(reaches[k].end, reach.end)


def test_policies_evaluated_together_must_roll_the_same_dice() -> None:
    _, g, sol, _ = solved("lever")
    other = sol.choice.copy()
    rolled = np.flatnonzero(other >= 0)
    other[rolled[0]] = -1  # drops a state's choice: not the same dice
    with pytest.raises(ValueError, match="same dice choices"):
        policy_eval.stack(g, [policy_eval.optimal(g, sol), policy_eval.uniform(g, other)])
    with pytest.raises(ValueError, match="no policy"):
        policy_eval.stack(g, [])
    with pytest.raises(ValueError, match="sum to 1"):
        policy_eval.checked(g, np.zeros((2, g.mv_node.shape[0])), sol.choice)


def test_picked_policies_equal_their_plain_evaluation() -> None:
    """evaluate_picks: policies given as picks at classes of nodes, on several objectives'
    graphs at once, have exactly the values evaluate gives each of them."""
    _, g, sol, start = solved("classic")
    _, g_score, _, _ = solved("classic-score")
    starts = g.move_starts()
    size = np.diff(starts)
    multi = np.flatnonzero(size >= 2)
    classes = np.full(size.shape[0], -1)
    classes[multi] = np.arange(multi.shape[0])
    rng = np.random.default_rng(5)
    picks = (rng.random((7, multi.shape[0])) * size[multi]).astype(np.int64)
    values = policy_eval.evaluate_picks([g, g_score], starts[:-1], classes, picks, sol.choice)
    assert values.shape == (2, 7, g.n_states)
    for k in range(7):
        rows = starts[:-1].copy()
        rows[multi] += picks[k]
        policy = policy_eval.deterministic(g, rows, sol.choice)
        for x, graph in enumerate((g, g_score)):
            assert np.array_equal(values[x, k], policy_eval.evaluate(graph, policy).value)
    assert values[0, 0, start] > 0


def test_picked_policies_are_checked() -> None:
    _, g, sol, _ = solved("six-tiles-one-die")
    starts = g.move_starts()
    size = np.diff(starts)
    classes = np.where(size >= 2, 0, -1)
    fine = np.zeros((1, 1), dtype=np.int64)
    policy_eval.evaluate_picks([g], starts[:-1], classes, fine, sol.choice)
    with pytest.raises(ValueError, match="past the last move"):
        policy_eval.evaluate_picks([g], starts[:-1], classes, fine + size.max(), sol.choice)
    with pytest.raises(ValueError, match="one move row of each node"):
        policy_eval.evaluate_picks([g], starts[1:], classes, fine, sol.choice)
    with pytest.raises(ValueError, match="a column of the picks"):
        policy_eval.evaluate_picks([g], starts[:-1], classes + 1, fine, sol.choice)
    _, other, _, _ = solved("classic")
    with pytest.raises(ValueError, match="same states"):
        policy_eval.evaluate_picks([g, other], starts[:-1], classes, fine, sol.choice)
