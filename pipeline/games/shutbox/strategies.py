"""Move strategies as data: each turns per-move features into a policy on a game's graph.

A strategy here is a rule a player could follow at the table ("shut the largest tile", "shut as
many tiles as you can"). It produces the same thing the solver does, one move per decision node
(or, for ``random``, a probability per move), so every strategy can be evaluated exactly
(:mod:`pipeline.solve.policy_eval`) and simulated (:mod:`pipeline.solve.simulate`) by the same
generic code.

Strategies see a game through a :class:`TileView`: which tiles (bits) each move shuts and what
they are worth, and each state's final score. Shut the Box's is built here; another tile game
supplies its own with a ``tile_view(graph)`` method returning (face value of each bit of a move
label, final score of each state), as Double Shutter does.
Deterministic strategies rank the legal moves of a node by a tuple of keys, larger first; the last
key is the move label (for Shut the Box the bitmask of the tiles shut, unique within a node), so
any remaining tie goes to the move holding the highest tile where two moves differ, as the
solver's ties do (``low-first`` negates it: the lowest tiles).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.games.base import Game
from pipeline.games.columns import distinct
from pipeline.games.shutbox import strategy_kernels
from pipeline.games.shutbox.names import STRATEGY_NAMES
from pipeline.graph import PASS, Graph
from pipeline.solve.policy_eval import Policy, chosen_rows, deterministic, optimal, uniform
from pipeline.solve.rank_order import Solution


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
    _dense: dict[str, tuple[np.ndarray, int]] = field(default_factory=dict, repr=False)

    def dense(self, name: str) -> tuple[np.ndarray, int]:
        """Feature ``name`` as dense ranks 0..k-1 (equal values, equal ranks) and k (cached)."""
        if name not in self._dense:
            self._dense[name] = dense_ranks(getattr(self, name))
        return self._dense[name]


def dense_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ranks 0..k-1 of ``values`` (equal values, equal ranks) and k. Small-range integers
    (most features, and whole-number floats with infinities) are ranked through a table of the
    values present, without sorting."""
    found, ranks = distinct(_as_integers(values))
    return ranks, max(found.shape[0], 1)


def _as_integers(values: np.ndarray) -> np.ndarray:
    """Whole-number floats (the look-ahead counts, +inf for a finished game) as integers in the
    same order (+inf above every number, -inf below); other arrays unchanged."""
    if values.dtype.kind != "f" or not values.size:
        return values
    finite = np.isfinite(values)
    if np.isnan(values).any() or not finite.any():
        return values
    low, high = values[finite].min(), values[finite].max()
    if high - low > 1 << 40 or np.any(values[finite] != np.round(values[finite])):
        return values
    out = np.where(finite, values, np.where(values > 0, high + 1, low - 1))
    return out.astype(np.int64)


@dataclass(frozen=True)
class Strategy:
    """A named move rule: how it picks a move, and how it breaks ties (for the README)."""

    name: str
    rule: str
    keys: tuple[tuple[str, int], ...] = ()
    """Ranking keys as (MoveFeatures field, +1 larger preferred or -1 smaller preferred), most
    important first; empty for a strategy that does not rank moves."""


#: Every strategy, in the order tables and reports list them.
STRATEGIES: tuple[Strategy, ...] = (
    Strategy("optimal", "the solver's best move for the variant's objective"),
    Strategy("random", "a legal move chosen uniformly at random"),
    Strategy(
        "greedy",
        "shut the highest tile you can; then fewer tiles",
        (("high", 1), ("n_shut", -1), ("label", 1)),
    ),
    Strategy(
        "max-tiles",
        "shut as many tiles as you can; then the highest tile",
        (("n_shut", 1), ("high", 1), ("label", 1)),
    ),
    Strategy(
        "fewest-tiles",
        "shut as few tiles as you can (a single tile when the roll's tile is open)",
        (("n_shut", -1), ("label", 1)),
    ),
    Strategy(
        "low-first",
        "shut the lowest tiles you can (keep the high tiles); then more tiles",
        (("high", -1), ("n_shut", 1), ("label", -1)),
    ),
    Strategy(
        "most-options",
        "leave the most roll totals that can still be played; then the highest tile, fewer tiles",
        (("next_totals", 1), ("high", 1), ("n_shut", -1), ("label", 1)),
    ),
    Strategy(
        "most-outcomes",
        "leave the highest chance that the next roll can be played; then the highest tile, "
        "fewer tiles",
        (("next_playable", 1), ("high", 1), ("n_shut", -1), ("label", 1)),
    ),
)

NAMES: tuple[str, ...] = tuple(s.name for s in STRATEGIES)
if NAMES != STRATEGY_NAMES:  # the light copy that help texts use must not drift
    raise ImportError("strategies.NAMES and variants.STRATEGY_NAMES differ")


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name``; KeyError otherwise."""
    return {s.name: s for s in STRATEGIES}[name]


def tile_view(game: Game, g: Graph) -> TileView | None:
    """The game's tile view, or None when tile strategies do not apply to it."""
    own = game.tile_view(g)
    if own is None:
        return None
    tile_value, score = own
    return TileView(np.asarray(tile_value, dtype=np.int64), np.asarray(score, np.float64))


def move_features(g: Graph, view: TileView, choice: np.ndarray) -> MoveFeatures:
    """Features of every move row; ``choice`` is the dice choice used for look-ahead features."""
    label = g.mv_label
    n_shut, high = strategy_kernels.tile_counts(label, view.tile_value)
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


def ranked_rows(g: Graph, features: MoveFeatures, keys: tuple[tuple[str, int], ...]) -> np.ndarray:
    """For each node, the move row with the lexicographically best keys.

    The keys are packed into one integer per move (dense rank of each key, most important key
    in the highest digits), so one segmented maximum over the node-sorted rows decides.
    """
    packed = np.zeros(g.mv_node.shape[0], dtype=np.int64)
    room = 1
    for name, sign in reversed(keys):
        ranks, count = features.dense(name)
        packed += (ranks if sign > 0 else count - 1 - ranks) * room
        room *= count
        if room >= 1 << 62:
            raise ValueError("too many distinct key values to pack into one integer")
    return strategy_kernels.first_max_rows(packed, g.move_starts())


def policy_for(
    strategy: Strategy, g: Graph, sol: Solution, features: MoveFeatures | None
) -> Policy:
    """The policy ``strategy`` plays on ``g``; every strategy rolls the dice the solver rolls."""
    if strategy.name == "optimal":
        return optimal(g, sol)
    if strategy.name == "random":
        return uniform(g, sol.choice)
    if not strategy.keys or features is None:
        raise ValueError(f"strategy {strategy.name!r} needs ranking keys and move features")
    return deterministic(g, ranked_rows(g, features, strategy.keys), sol.choice)


def policies(game: Game, g: Graph, sol: Solution) -> dict[str, Policy] | None:
    """Every strategy's policy for one game, or None when the game has no tile view."""
    view = tile_view(game, g)
    if view is None:
        return None
    features = move_features(g, view, sol.choice)
    return {s.name: policy_for(s, g, sol, features) for s in STRATEGIES}
