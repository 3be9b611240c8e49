"""The exceptions worth learning: a rule, then one (position, roll) override at a time.

Start from a rule's policy. At each step every alternative is priced exactly under the current
play (the rule with the exceptions so far): switching the move at a (state, roll) to another
legal move gains the probability of reaching that (state, roll) times the difference of the two
moves' values, both followed by the current play; switching the dice rolled in a state (where
the rules offer a choice) gains the probability of reaching the state times the difference of
the two choices' values. A game meets a (state, roll) at most once (every move shuts a tile),
so that product is exactly what the value from the start gains. The step takes the largest
gain, and the next step recomputes everything from one backward pass (values) and one forward
pass (reach) of the new play, so the curve "value with n exceptions" is exact at every n and
never goes down.

Greedy steps can stall short of optimal play: an override may pay only once another position,
which the current play never reaches, is played better too. When no override gains anything but
the play is not yet optimal, the step takes the override (at a position the current play never
reaches, so it gains nothing yet) that optimal play's own reach weighs most (the performance
difference: optimal reach x what the override gains there). Each step improves the play at some
position and loses nothing anywhere, so the curve reaches optimal play's value once enough
exceptions are taken, and stops there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pipeline.games.shutbox.rule_search import Objective, optimal_rows
from pipeline.graph import Graph
from pipeline.solve import policy_eval
from pipeline.solve.tolerance import ties

#: Exceptions computed per rule by the build (the curve's length).
MAX_EXCEPTIONS = 50


@dataclass(frozen=True)
class Override:
    """One override of the play: at a (state, roll), a move; or in a state, the dice."""

    state: int
    """Graph index of the state."""
    node: int
    """Decision node (state, roll) of a move override; -1 for a dice override."""
    row: int
    """The move row played instead (move override); -1 for a dice override."""
    replaced: int
    """The move row the play had there (move override); -1 for a dice override."""
    dice: int
    """Dice rolled instead (dice override); 0 for a move override."""
    replaced_dice: int
    """Dice the play rolled there (dice override); 0 for a move override."""
    reach: float
    """Probability that the play before this override reaches the (state, roll), or the state."""
    gain: float
    """What the value from the start gains by it, exactly: value after - value before, the
    other way round for an objective that is minimised (so never negative)."""
    value: float
    """The value from the start with this exception and the ones before it."""


@dataclass(frozen=True)
class Curve:
    """A rule's exceptions in the order they are learnt, and the value after each."""

    start_value: float
    """The rule's own value from the start (no exception)."""
    overrides: list[Override]
    optimal: bool
    """Whether the last step reached optimal play's value (no override gains anything)."""


def curve(obj: Objective, rows: np.ndarray, choice: np.ndarray, n: int = MAX_EXCEPTIONS) -> Curve:
    """Up to ``n`` exceptions to the policy playing ``rows`` (a move row per node) and rolling
    ``choice``, each the best next override under the play so far (see the module's text)."""
    g = obj.graph
    rows = np.array(rows, dtype=np.int64)
    choice = np.array(choice, dtype=np.int64)
    plan = policy_eval.plan(g)
    sign = 1.0 if obj.maximise else -1.0
    optimal_reach = policy_eval.reach(
        g, policy_eval.deterministic(g, optimal_rows(obj), obj.solution.choice), obj.start, plan
    )
    dice_rows = _dice_groups(g)
    play = _Priced(g, rows, choice, obj.start, plan)
    first = play.start_value
    found: list[Override] = []
    done = False
    while len(found) < n:
        step = play.best_override(sign, dice_rows, optimal_reach)
        if step is None:
            done = True
            break
        before = play.start_value
        if step.node >= 0:
            rows[step.node] = step.row
        else:
            choice[step.state] = step.dice
        play = _Priced(g, rows, choice, obj.start, plan)
        after = play.start_value
        found.append(dataclasses.replace(step, gain=sign * (after - before), value=after))
    if not done:
        done = play.best_override(sign, dice_rows, optimal_reach) is None
    return Curve(first, found, done)


@dataclass(frozen=True)
class _DiceGroups:
    """Each (state, choice) of the graph: its chance rows' group and its choice."""

    group: np.ndarray
    """int64 [C]: the (state, choice) group of each chance row."""
    state: np.ndarray
    """int64 [G]: each group's state."""
    dice: np.ndarray
    """int64 [G]: each group's choice."""
    prob: np.ndarray
    """float64 [C]: each chance row's probability."""


def _dice_groups(g: Graph) -> _DiceGroups:
    """The (state, choice) groups of the chance rows (rows are sorted by state, choice)."""
    key = g.ch_state.astype(np.int64) * (1 << 20) + g.ch_choice.astype(np.int64)
    new = np.concatenate(([True], key[1:] != key[:-1])) if key.size else np.zeros(0, bool)
    group = np.cumsum(new) - 1
    state, dice = g.ch_state[new].astype(np.int64), g.ch_choice[new].astype(np.int64)
    return _DiceGroups(group, state, dice, g.ch_prob)


class _Priced:
    """One play's values and reach: what every override would gain."""

    def __init__(
        self, g: Graph, rows: np.ndarray, choice: np.ndarray, start: int, plan: policy_eval.Plan
    ) -> None:
        self.g, self.rows, self.choice = g, rows, choice
        policy = policy_eval.deterministic(g, rows, choice)
        self.values, self.reach = policy_eval.evaluate_and_reach(g, policy, start, plan)
        self.start_value = float(self.values.value[start])

    def best_override(
        self, sign: float, dice: _DiceGroups, optimal_reach: policy_eval.Reach
    ) -> Override | None:
        """The override that gains most now; when none does, the one optimal play's reach
        weighs most among those at positions the play never reaches; None when neither
        exists (the play is optimal)."""
        g, v = self.g, self.values
        legal = g.mv_label >= 0
        node_of = g.mv_node
        move_adv = sign * (v.move_value - v.node_value[node_of])
        # a gain: better, and not a tie (the tie rule's array form)
        move_ok = legal & (move_adv > 0) & ~ties(v.move_value, v.node_value[node_of])
        groups = np.bincount(
            dice.group, weights=dice.prob * v.node_value[g.ch_node], minlength=dice.state.shape[0]
        )
        dice_adv = sign * (groups - v.value[dice.state])
        dice_ok = (
            (dice.dice != self.choice[dice.state])
            & (dice_adv > 0)
            & ~ties(groups, v.value[dice.state])
        )
        move_gain = np.where(move_ok, self.reach.node[node_of] * move_adv, 0.0)
        dice_gain = np.where(dice_ok, self.reach.state[dice.state] * dice_adv, 0.0)
        pick = _largest(move_gain, dice_gain)
        if pick is None:
            # stalled: weigh the overrides the play never reaches by optimal play's reach
            move_gain = np.where(move_ok, optimal_reach.node[node_of] * move_adv, 0.0)
            dice_gain = np.where(dice_ok, optimal_reach.state[dice.state] * dice_adv, 0.0)
            pick = _largest(move_gain, dice_gain)
        if pick is None:
            return None
        kind, at = pick
        if kind == "move":
            node = int(node_of[at])
            state = int(g.node_state[node])
            return Override(
                state, node, at, int(self.rows[node]), 0, 0, float(self.reach.node[node]), 0.0, 0.0
            )
        state = int(dice.state[at])
        reach = float(self.reach.state[state])
        return Override(state, -1, -1, -1, int(dice.dice[at]), int(self.choice[state]), reach, 0, 0)


def _largest(move_gain: np.ndarray, dice_gain: np.ndarray) -> tuple[str, int] | None:
    """The largest positive gain among moves and dice choices (the first of equals: moves by
    row, then dice choices); None when none is positive."""
    best_move = int(np.argmax(move_gain)) if move_gain.size else -1
    best_dice = int(np.argmax(dice_gain)) if dice_gain.size else -1
    top_move = move_gain[best_move] if best_move >= 0 else 0.0
    top_dice = dice_gain[best_dice] if best_dice >= 0 else 0.0
    if max(top_move, top_dice) <= 0.0:
        return None
    return ("move", best_move) if top_move >= top_dice else ("dice", best_dice)
