"""Move strategies as data: each turns per-move features into a policy on a game's graph.

A strategy here is a rule a player could follow at the table ("shut the largest tile", "shut as
many tiles as you can"). It produces the same thing the solver does, one move per decision node
(or, for ``random``, a probability per move), so every strategy can be evaluated exactly
(:mod:`pipeline.solvers.policy_eval`) and simulated (:mod:`pipeline.solvers.simulate`) by the same
generic code.

Strategies see a game through a :class:`TileView`: which tiles (bits) each move shuts and what
they are worth, and each state's final score. Shut the Box supplies one below; another tile game
(e.g. Double Shutter) can supply its own by giving its game class a ``tile_view(graph)`` method.
Deterministic strategies rank the legal moves of a node by a tuple of keys, larger first; the last
key is the move label (for Shut the Box the bitmask of the tiles shut, unique within a node), so
any remaining tie goes to the move holding the highest tile where two moves differ, as the
solver's ties do (``low-first`` negates it: the lowest tiles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.games.base import Game
from pipeline.games.shutbox import ShutTheBox
from pipeline.solvers.graph import PASS, Graph
from pipeline.solvers.policy_eval import Policy, chosen_rows, deterministic, optimal, uniform
from pipeline.solvers.rank_order import Solution


@dataclass(frozen=True)
class TileView:
    """What tile strategies need to know about a game whose moves shut sets of tiles."""

    tile_value: np.ndarray
    """int64 [B]: face value of the tile at bit b of a move label."""
    score: np.ndarray
    """float64 [S]: final score if the game ends in each state (0 = every tile shut)."""


@dataclass(frozen=True)
class MoveFeatures:
    """Per move row features that strategies rank moves by (pass rows have label -1)."""

    label: np.ndarray
    """int64 [M]: the game's move label (bitmask of the tiles shut)."""
    n_shut: np.ndarray
    """int64 [M]: number of tiles the move shuts."""
    high: np.ndarray
    """int64 [M]: value of the highest tile it shuts."""
    next_totals: np.ndarray
    """float64 [M]: roll totals the successor can still play (terminal successor: +inf)."""
    next_playable: np.ndarray
    """float64 [M]: chance that the successor's next roll can be played, as a whole number of
    outcomes over the common denominator of the game's rolls (terminal: +inf)."""


@dataclass(frozen=True)
class Strategy:
    """A named move rule: how it picks a move, and how it breaks ties (for the README)."""

    name: str
    rule: str
    keys: Callable[[MoveFeatures], tuple[np.ndarray, ...]] | None
    """Ranking keys, most important first, larger preferred; None for a non-ranking strategy."""


#: Every strategy, in the order tables and reports list them.
STRATEGIES: tuple[Strategy, ...] = (
    Strategy("optimal", "the solver's best move for the variant's objective", None),
    Strategy("random", "a legal move chosen uniformly at random", None),
    Strategy(
        "greedy",
        "shut the highest tile you can; then fewer tiles",
        lambda f: (f.high, -f.n_shut, f.label),
    ),
    Strategy(
        "max-tiles",
        "shut as many tiles as you can; then the highest tile",
        lambda f: (f.n_shut, f.high, f.label),
    ),
    Strategy(
        "fewest-tiles",
        "shut as few tiles as you can (a single tile when the roll's tile is open)",
        lambda f: (-f.n_shut, f.label),
    ),
    Strategy(
        "low-first",
        "shut the lowest tiles you can (keep the high tiles); then more tiles",
        lambda f: (-f.high, f.n_shut, -f.label),
    ),
    Strategy(
        "most-options",
        "leave the most roll totals that can still be played; then the highest tile, fewer tiles",
        lambda f: (f.next_totals, f.high, -f.n_shut, f.label),
    ),
    Strategy(
        "most-outcomes",
        "leave the highest chance that the next roll can be played; then the highest tile, "
        "fewer tiles",
        lambda f: (f.next_playable, f.high, -f.n_shut, f.label),
    ),
)

NAMES: tuple[str, ...] = tuple(s.name for s in STRATEGIES)


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name``; KeyError otherwise."""
    return {s.name: s for s in STRATEGIES}[name]


def tile_view(game: Game, g: Graph) -> TileView | None:
    """The game's tile view, or None when tile strategies do not apply to it."""
    own = getattr(game, "tile_view", None)
    if callable(own):
        return own(g)
    if isinstance(game, ShutTheBox):
        scores = game.scores(g.state_id).astype(np.float64)
        return TileView(np.arange(1, game.r.tiles + 1, dtype=np.int64), scores)
    return None


def move_features(g: Graph, view: TileView, choice: np.ndarray) -> MoveFeatures:
    """Features of every move row; ``choice`` is the dice choice used for look-ahead features."""
    label = g.mv_label
    bits = view.tile_value.shape[0]
    legal = label >= 0
    n_shut = np.zeros(label.shape[0], dtype=np.int64)
    high = np.full(label.shape[0], -1, dtype=np.int64)
    for b in range(bits):
        has = legal & (((label >> b) & 1) == 1)
        n_shut += has
        high = np.where(has, np.maximum(high, view.tile_value[b]), high)
    totals, playable = _lookahead(g, choice)
    dst = g.mv_dst
    ok = dst >= 0
    safe = np.maximum(dst, 0)
    done = ok & ~np.isnan(g.terminal[safe])
    next_totals = np.where(done, np.inf, np.where(ok, totals[safe], 0.0))
    next_playable = np.where(done, np.inf, np.where(ok, playable[safe], 0.0))
    return MoveFeatures(label, n_shut, high, next_totals, next_playable)


def _lookahead(g: Graph, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per state: how many roll totals of its chosen dice can be played, and how many outcomes
    (dice outcomes over the common denominator of all rolls: the probability, scaled)."""
    n_nodes = g.node_state.shape[0]
    node_live = np.bincount(g.mv_node[g.mv_label != PASS], minlength=n_nodes) > 0
    rows = chosen_rows(g, choice)
    live = node_live[g.ch_node[rows]]
    totals = np.bincount(g.ch_state[rows], weights=live.astype(np.float64), minlength=g.n_states)
    # Count outcomes over a common denominator: integer-valued sums, so equal chances tie exactly
    # (summed float probabilities would break such ties by rounding noise).
    common = int(np.lcm.reduce(np.unique(g.ch_denom))) if rows.shape[0] else 1
    outcomes = live * g.ch_count[rows] * (common // g.ch_denom[rows])
    ways = np.bincount(g.ch_state[rows], weights=outcomes.astype(np.float64), minlength=g.n_states)
    return totals, ways


def ranked_rows(g: Graph, keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """For each node, the move row with the lexicographically largest keys."""
    order = np.lexsort((*reversed(keys), g.mv_node))
    nodes = g.mv_node[order]
    last = np.flatnonzero(np.append(nodes[1:] != nodes[:-1], True))
    return order[last]


def policy_for(
    strategy: Strategy, g: Graph, sol: Solution, features: MoveFeatures | None
) -> Policy:
    """The policy ``strategy`` plays on ``g``; every strategy rolls the dice the solver rolls."""
    if strategy.name == "optimal":
        return optimal(g, sol)
    if strategy.name == "random":
        return uniform(g, sol.choice)
    if strategy.keys is None or features is None:
        raise ValueError(f"strategy {strategy.name!r} needs move features")
    return deterministic(g, ranked_rows(g, strategy.keys(features)), sol.choice)


def policies(game: Game, g: Graph, sol: Solution) -> dict[str, Policy] | None:
    """Every strategy's policy for one game, or None when the game has no tile view."""
    view = tile_view(game, g)
    if view is None:
        return None
    features = move_features(g, view, sol.choice)
    return {s.name: policy_for(s, g, sol, features) for s in STRATEGIES}
