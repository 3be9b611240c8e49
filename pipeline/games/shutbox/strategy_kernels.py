"""Passes over a graph's move rows for the tile strategies: numpy, a pass per tile, for the
features of each move; compiled (numba) where a pass per key and node would not do (the node
patterns, the rules' picks)."""

from __future__ import annotations

import numpy as np

from pipeline.solve import threads
from pipeline.solve.compiled import kernel


def tile_counts(label: np.ndarray, tile_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per move row: how many tiles its label (a bitmask) shuts, and the face value of the
    highest of them (0 and -1 for a pass row, label < 0)."""
    label = np.asarray(label, dtype=np.int64)
    n_shut = np.zeros(label.shape[0], dtype=np.int64)
    high = np.full(label.shape[0], -1, dtype=np.int64)
    for b, face in enumerate(np.asarray(tile_value, dtype=np.int64).tolist()):
        has = (label >= 0) & ((label >> b) & 1 == 1)
        n_shut += has
        np.maximum(high, np.where(has, face, -1), out=high)
    return n_shut, high


def first_max_rows(packed: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For each node (its move rows ``starts[n]:starts[n + 1]``, at least one), the first row
    holding the node's largest ``packed`` key."""
    sizes = np.diff(starts)
    if sizes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    node = np.repeat(np.arange(sizes.shape[0]), sizes)
    top = np.maximum.reduceat(packed, starts[:-1])
    rows = np.flatnonzero(packed == top[node])
    return rows[_first_of_runs(node[rows])].astype(np.int64)


def played_rows(
    move_prob: np.ndarray, mv_node: np.ndarray, n_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per node (move rows sorted by node): how many of its move rows a policy plays
    (probability > 0), and the last of them (0 where none is)."""
    rows = np.flatnonzero(move_prob > 0)
    nodes = mv_node[rows]
    count = np.bincount(nodes, minlength=n_nodes).astype(np.int64)
    row = np.zeros(n_nodes, dtype=np.int64)
    last = np.append(nodes[1:] != nodes[:-1], True) if nodes.shape[0] else nodes.astype(bool)
    row[nodes[last]] = rows[last]
    return count, row


def tile_extremes(
    label: np.ndarray, next_mask: np.ndarray, tile_value: np.ndarray, small_mask: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per move row (``next_mask``: the open tiles after it as a bitmask, -1 when the game
    ends): the face value of the lowest tile it shuts, of the highest tile left open (0 when
    none is), and how many of the ``small_mask`` tiles stay open; -1 each for a pass row."""
    label = np.asarray(label, dtype=np.int64)
    rest = np.asarray(next_mask, dtype=np.int64)
    moved = label >= 0
    going = moved & (rest >= 0)
    low = np.full(label.shape[0], -1, dtype=np.int64)
    top = np.where(going, 0, -1).astype(np.int64)
    smalls = np.where(going, 0, -1).astype(np.int64)
    faces = np.asarray(tile_value, dtype=np.int64).tolist()
    for b, face in reversed(list(enumerate(faces))):  # the lowest tile shut is the last met
        low = np.where(moved & ((label >> b) & 1 == 1), face, low)
        left = going & ((rest >> b) & 1 == 1)
        np.maximum(top, np.where(left, face, -1), out=top)
        if (small_mask >> b) & 1:
            smalls += left
    return low, top, smalls


def _first_of_runs(keys: np.ndarray) -> np.ndarray:
    """Whether each entry is the first of its run of equal consecutive ``keys``."""
    return np.append(True, keys[1:] != keys[:-1]) if keys.shape[0] else keys.astype(bool)


def node_patterns(
    ranks: np.ndarray, label: np.ndarray, starts: np.ndarray, nodes: np.ndarray, width: int
) -> np.ndarray:
    """Each node of ``nodes`` as the order of its moves under every key: int8 [node, width,
    keys + 1], entry (j, i, k) the number of the node's moves with a smaller key k than its
    i-th move (the last k: the label), -1 past its last move. Two nodes with equal patterns
    get the same pick from every rule."""
    out = np.full((nodes.shape[0], width, ranks.shape[0] + 1), -1, dtype=np.int8)
    _node_patterns(ranks, label, starts, nodes, out)
    return out


@kernel
def _node_patterns(ranks, label, starts, nodes, out):  # type: ignore[no-untyped-def]
    """:func:`node_patterns` into ``out`` (allocated by the caller)."""
    n_keys = ranks.shape[0]
    for j in range(nodes.shape[0]):
        first = starts[nodes[j]]
        size = starts[nodes[j] + 1] - first
        for i in range(size):
            for k in range(n_keys + 1):
                below = 0
                for o in range(size):
                    if k < n_keys:
                        smaller = ranks[k, first + o] < ranks[k, first + i]
                    else:
                        smaller = label[first + o] < label[first + i]
                    if smaller:
                        below += 1
                out[j, i, k] = below


def rule_picks(
    patterns: np.ndarray, sizes: np.ndarray, rules: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The move each rule picks in each node pattern (see :func:`node_patterns`), as its place
    among the node's moves (0 = the first row), with a 64-bit FNV-1a hash of each rule's picks.

    ``rules[r]``: up to three signed key numbers, ``+(k + 1)`` for larger first, ``-(k + 1)``
    for smaller first, 0 for none. A tie left by a rule's keys goes to the larger label (the
    pattern's last column). Rules run in parallel (blocks of them on threads).
    """
    n_rules = rules.shape[0]
    picks = np.zeros((n_rules, patterns.shape[0]), dtype=np.uint8)
    hashes = np.zeros(n_rules, dtype=np.uint64)
    _pick_rules(rules, patterns, sizes, picks, hashes)
    return picks, hashes


@threads.on_blocks
@kernel
def _pick_rules(lo, hi, rules, patterns, sizes, picks, hashes):  # type: ignore[no-untyped-def]
    """Rules ``lo`` to ``hi - 1`` of :func:`rule_picks`."""
    for r in range(lo, hi):
        hashes[r] = pick_rule(patterns, sizes, rules[r], picks[r])


@kernel
def pick_rule(patterns, sizes, rule, out):  # type: ignore[no-untyped-def]
    """One rule's picks (see :func:`rule_picks`) into ``out``; their hash."""
    label = patterns.shape[2] - 1
    h = np.uint64(14695981039346656037)
    for p in range(patterns.shape[0]):
        best = 0
        for m in range(1, sizes[p]):
            verdict = 0
            for slot in range(rule.shape[0]):
                code = rule[slot]
                if code == 0:
                    break
                k = abs(code) - 1
                diff = patterns[p, m, k] - patterns[p, best, k]
                if diff != 0:
                    verdict = 1 if (diff > 0) == (code > 0) else -1
                    break
            if verdict > 0 or (verdict == 0 and patterns[p, m, label] > patterns[p, best, label]):
                best = m
        out[p] = best
        h = (h ^ np.uint64(best)) * np.uint64(1099511628211)
    return h
