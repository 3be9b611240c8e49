"""The keys of the rule family as arrays over a box's move rows, and the policies rules make.

Every key (:data:`pipeline.games.shutbox.rule_family.KEYS`) is computed once per move row of the
graph, as a dense rank (equal values, equal ranks; larger value, larger rank), so that a rule is
a lexicographic comparison of a few small integers and thousands of rules are turned into
policies by one compiled pass (:func:`pipeline.games.shutbox.strategy_kernels.rule_picks`).
Only the look-ahead keys (``totals``, ``chance``) depend on the dice the rule rolls next, so
they are ranked again for each one-die threshold.

A state of a box is its open tiles as a bitmask (bit t-1 for tile t), its move labels the
tiles shut: the keys read both, so they apply to :class:`~pipeline.games.shutbox.game.ShutTheBox`
graphs (not Double Shutter's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from pipeline.games.shutbox import strategies, strategy_kernels
from pipeline.games.shutbox.rule_family import KEY_NAMES, LOOKAHEAD, Rule
from pipeline.games.shutbox.rules import RuleSet
from pipeline.graph import Graph


class Box(Protocol):
    """What the rules need of a box (:class:`pipeline.games.shutbox.game.ShutTheBox` is one;
    named here so that the game can run the search without an import circle)."""

    @property
    def r(self) -> RuleSet: ...

    def scores(self, ids: np.ndarray) -> np.ndarray:
        """The final score of each state id."""
        ...

    def open_sums(self, ids: np.ndarray) -> np.ndarray:
        """The open tiles' sum of each state id."""
        ...


#: The tiles whose being open the ``small`` and ``smalls`` keys count: 1, 2 and 3.
SMALL_TILES = (1, 2, 3)
#: The most moves a roll may have: patterns count a node's moves below each one in int8, picks
#: number them in uint8 (12 tiles have at most 124 sets with one sum).
MAX_MOVES_PER_NODE = 127


@dataclass(frozen=True)
class BoxRules:
    """A solved box's graph as the rule family sees it: what each move row does, each state's
    choices of dice, and the key ranks that do not depend on the dice."""

    box: Box
    graph: Graph
    starts: np.ndarray
    """int64 [N + 1]: each node's first move row, and the end."""
    multi: np.ndarray
    """int64: the nodes with two or more legal moves (the only ones where rules differ)."""
    open_sum: np.ndarray
    """int64 [S]: each state's open sum (what the one-die threshold reads)."""
    one_die: np.ndarray
    """bool [S]: whether the rules let the player choose one die in the state."""
    base_choice: np.ndarray
    """int64 [S]: the dice rolled where there is no choice, the usual number where there is one
    (-1 in terminal states)."""
    thresholds: tuple[int, ...]
    """The one-die thresholds that make different choices (0 = never), or () without a choice."""
    fixed: dict[str, np.ndarray] = field(default_factory=dict)
    """Dense ranks (int32 [M]) of the keys that do not depend on the dice."""
    _ranked: dict[int | None, Ranked] = field(default_factory=dict, repr=False)

    @property
    def has_choice(self) -> bool:
        """Whether the rules let the player choose how many dice to roll somewhere."""
        return bool(self.thresholds)

    def choice_for(self, threshold: int | None) -> np.ndarray:
        """The dice a rule with ``threshold`` rolls in every state."""
        if threshold is None or not self.has_choice:
            return self.base_choice
        return np.where(self.one_die & (self.open_sum <= threshold), 1, self.base_choice)

    def ranks(self, threshold: int | None) -> np.ndarray:
        """int32 [keys, M]: every key's dense ranks for a rule with ``threshold``."""
        choice = self.choice_for(threshold)
        view = strategies.TileView(self.tile_value, self.box.scores(self.graph.state_id))
        features = strategies.move_features(self.graph, view, choice)
        ahead = {
            "totals": _dense(features.next_totals),
            "chance": _dense(features.next_playable),
        }
        return np.stack([ahead[k] if k in LOOKAHEAD else self.fixed[k] for k in KEY_NAMES])

    @property
    def tile_value(self) -> np.ndarray:
        """Face value of the tile at each bit of a move label."""
        return np.arange(1, self.box.r.tiles + 1, dtype=np.int64)

    def ranked(self, threshold: int | None) -> Ranked:
        """The nodes' move patterns under every key for a rule with ``threshold`` (made once:
        a few hundred patterns each)."""
        if threshold not in self._ranked:
            self._ranked[threshold] = self._make_ranked(threshold)
        return self._ranked[threshold]

    def _make_ranked(self, threshold: int | None) -> Ranked:
        """:meth:`ranked`, computed."""
        ranks = self.ranks(threshold)
        width = int(np.diff(self.starts)[self.multi].max()) if self.multi.size else 1
        label = self.graph.mv_label.astype(np.int64)
        full = strategy_kernels.node_patterns(ranks, label, self.starts, self.multi, width)
        flat = np.ascontiguousarray(full.reshape(full.shape[0], -1))
        if flat.shape[0]:
            keys = flat.view(np.dtype((np.void, flat.shape[1])))[:, 0]
            _, first, pattern_of = np.unique(keys, return_index=True, return_inverse=True)
        else:
            first = pattern_of = np.zeros(0, dtype=np.int64)
        patterns = np.ascontiguousarray(full[first])
        sizes = np.diff(self.starts)[self.multi[first]].astype(np.int64)
        return Ranked(self.choice_for(threshold), patterns, sizes, pattern_of.reshape(-1))

    def rule_rows(self, rule: Rule) -> np.ndarray:
        """int64 [N]: the move row the rule plays at every node."""
        ranked = self.ranked(rule.one_die_at_most)
        picks = np.zeros(ranked.sizes.shape[0], dtype=np.uint8)
        strategy_kernels.pick_rule(ranked.patterns, ranked.sizes, encode([rule])[0], picks)
        rows = self.starts[:-1].copy()
        rows[self.multi] += picks[ranked.pattern_of]
        return rows


@dataclass(frozen=True)
class Ranked:
    """A box's nodes as the rules see them for one one-die threshold: each node with a choice
    of moves reduced to its *pattern* (the order of its moves under every key), and the nodes
    sharing a pattern, where every rule picks alike."""

    choice: np.ndarray
    """int64 [S]: the dice rolled in each state."""
    patterns: np.ndarray
    """int8 [P, width, keys + 1]: see :func:`strategy_kernels.node_patterns`."""
    sizes: np.ndarray
    """int64 [P]: moves in each pattern."""
    pattern_of: np.ndarray
    """int64 [multi]: the pattern of each node with a choice (``BoxRules.multi``)."""


def box_rules(box: Box, g: Graph) -> BoxRules:
    """The rule family's view of a box's graph."""
    starts = g.move_starts()
    legal = np.bincount(g.mv_node[g.mv_label >= 0], minlength=g.node_state.shape[0])
    if legal.size and legal.max() > MAX_MOVES_PER_NODE:
        raise ValueError(
            f"a roll with more than {MAX_MOVES_PER_NODE} moves: too many for the rules"
        )
    choices = _choices(g)
    base = np.array([max(c) if c else -1 for c in choices], dtype=np.int64)
    one_die = np.array([1 in c and len(c) > 1 for c in choices], dtype=bool)
    open_sum = box.open_sums(g.state_id)
    sums = sorted(set(open_sum[one_die].tolist()))
    thresholds = tuple([0, *sums]) if sums else ()
    rules = BoxRules(
        box, g, starts, np.flatnonzero(legal >= 2), open_sum, one_die, base, thresholds
    )
    rules.fixed.update(_fixed_ranks(rules))
    return rules


def _choices(g: Graph) -> list[list[int]]:
    """The numbers of dice each state may roll (empty for terminal states)."""
    pairs = np.unique(np.stack([g.ch_state.astype(np.int64), g.ch_choice.astype(np.int64)]), axis=1)
    out: list[list[int]] = [[] for _ in range(g.n_states)]
    for state, dice in pairs.T.tolist():
        out[state].append(dice)
    return out


def _fixed_ranks(rules: BoxRules) -> dict[str, np.ndarray]:
    """Dense ranks of the keys that do not depend on the dice rolled next."""
    g, box = rules.graph, rules.box
    label = g.mv_label.astype(np.int64)
    dst = g.mv_dst.astype(np.int64)
    ends = dst < 0
    next_mask = np.where(ends, -1, g.state_id[np.maximum(dst, 0)])
    count, high = strategy_kernels.tile_counts(label, rules.tile_value)
    small = sum(1 << (t - 1) for t in SMALL_TILES if t <= box.r.tiles)
    low, top, smalls = strategy_kernels.tile_extremes(label, next_mask, rules.tile_value, small)
    score = np.where(ends, -1, box.scores(np.maximum(next_mask, 0)))
    values = {
        "high": high,
        "count": count,
        "low": low,
        "top": top,
        "score": score,
        "small": np.where(ends, -1, smalls > 0),
        "smalls": smalls,
    }
    return {name: _dense(v) for name, v in values.items()}


def _dense(values: np.ndarray) -> np.ndarray:
    """Dense ranks as int32 (equal values, equal ranks; larger value, larger rank)."""
    ranks, _ = strategies.dense_ranks(values)
    return ranks.astype(np.int32)


def encode(rules: list[Rule]) -> np.ndarray:
    """int8 [R, 3]: each rule's keys as signed key numbers (+(k+1) larger first, -(k+1) smaller
    first, 0 for none), the form the compiled pass reads."""
    out = np.zeros((len(rules), 3), dtype=np.int8)
    index = {name: i + 1 for i, name in enumerate(KEY_NAMES)}
    for r, rule in enumerate(rules):
        for slot, (name, sign) in enumerate(rule.keys):
            out[r, slot] = sign * index[name]
    return out
