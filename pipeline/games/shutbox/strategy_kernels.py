"""Compiled passes over a graph's move rows for the tile strategies (one pass each, where numpy
would make a pass per tile or per key)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def tile_counts(label, tile_value):  # type: ignore[no-untyped-def]
    """Per move row: how many tiles its label (a bitmask) shuts, and the face value of the
    highest of them (0 and -1 for a pass row, label < 0)."""
    n_shut = np.zeros(label.shape[0], dtype=np.int64)
    high = np.full(label.shape[0], -1, dtype=np.int64)
    for m in range(label.shape[0]):
        bits = label[m]
        if bits < 0:
            continue
        b = 0
        while bits:
            if bits & 1:
                n_shut[m] += 1
                if tile_value[b] > high[m]:
                    high[m] = tile_value[b]
            bits >>= 1
            b += 1
    return n_shut, high


@njit(cache=True, nogil=True)
def first_max_rows(packed, starts):  # type: ignore[no-untyped-def]
    """For each node (its move rows ``starts[n]:starts[n + 1]``), the first row holding the
    node's largest ``packed`` key."""
    rows = np.empty(starts.shape[0] - 1, dtype=np.int64)
    for n in range(rows.shape[0]):
        best = starts[n]
        for m in range(starts[n] + 1, starts[n + 1]):
            if packed[m] > packed[best]:
                best = m
        rows[n] = best
    return rows


@njit(cache=True, nogil=True)
def played_rows(move_prob, mv_node, n_nodes):  # type: ignore[no-untyped-def]
    """Per node: how many of its move rows a policy plays (probability > 0), and the last of
    them."""
    count = np.zeros(n_nodes, dtype=np.int64)
    row = np.zeros(n_nodes, dtype=np.int64)
    for m in range(move_prob.shape[0]):
        if move_prob[m] > 0:
            count[mv_node[m]] += 1
            row[mv_node[m]] = m
    return count, row


@njit(cache=True, nogil=True)
def tile_extremes(label, next_mask, tile_value, small_mask):  # type: ignore[no-untyped-def]
    """Per move row (``next_mask``: the open tiles after it as a bitmask, -1 when the game
    ends): the face value of the lowest tile it shuts, of the highest tile left open (0 when
    none is), and how many of the ``small_mask`` tiles stay open; -1 each for a pass row."""
    m_all = label.shape[0]
    low = np.full(m_all, -1, dtype=np.int64)
    top = np.full(m_all, -1, dtype=np.int64)
    smalls = np.full(m_all, -1, dtype=np.int64)
    for m in range(m_all):
        bits = label[m]
        if bits < 0:
            continue
        b = 0
        while not (bits >> b) & 1:
            b += 1
        low[m] = tile_value[b]
        rest = next_mask[m]
        if rest < 0:
            continue
        top[m] = 0
        b = 0
        while rest >> b:
            if (rest >> b) & 1 and tile_value[b] > top[m]:
                top[m] = tile_value[b]
            b += 1
        left = rest & small_mask
        count = 0
        while left:
            count += left & 1
            left >>= 1
        smalls[m] = count
    return low, top, smalls


@njit(cache=True, nogil=True)
def node_patterns(ranks, label, starts, nodes, width):  # type: ignore[no-untyped-def]
    """Each node of ``nodes`` as the order of its moves under every key: int8 [node, width,
    keys + 1], entry (j, i, k) the number of the node's moves with a smaller key k than its
    i-th move (the last k: the label), -1 past its last move. Two nodes with equal patterns
    get the same pick from every rule."""
    n_keys = ranks.shape[0]
    out = np.full((nodes.shape[0], width, n_keys + 1), -1, dtype=np.int8)
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
    return out


@njit(cache=True, nogil=True, parallel=True)
def rule_picks(patterns, sizes, rules):  # type: ignore[no-untyped-def]
    """The move each rule picks in each node pattern (see :func:`node_patterns`), as its place
    among the node's moves (0 = the first row), with a 64-bit FNV-1a hash of each rule's picks.

    ``rules[r]``: up to three signed key numbers, ``+(k + 1)`` for larger first, ``-(k + 1)``
    for smaller first, 0 for none. A tie left by a rule's keys goes to the larger label (the
    pattern's last column). Rules run in parallel.
    """
    n_rules = rules.shape[0]
    picks = np.zeros((n_rules, patterns.shape[0]), dtype=np.uint8)
    hashes = np.zeros(n_rules, dtype=np.uint64)
    for r in prange(n_rules):
        hashes[r] = pick_rule(patterns, sizes, rules[r], picks[r])
    return picks, hashes


@njit(cache=True, nogil=True)
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
