"""The compiled solve of one turn (numba): every player's payoff from every mask of one block.

A block is one seat facing one context (the best score so far and how many players share it);
its masks are solved in increasing order (every move shuts tiles, so it leads to a smaller
mask), each to a vector of payoffs (see :mod:`pipeline.games.nplayer.game` for its layout).
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.compiled import kernel
from pipeline.solve.ties import tie_tolerance


@kernel
def solve_block(
    mover: int,
    alive: np.ndarray,
    terminal: np.ndarray,
    term_row: np.ndarray,
    ch_start: np.ndarray,
    ch_choice: np.ndarray,
    ch_prob: np.ndarray,
    ch_node: np.ndarray,
    mv_start: np.ndarray,
    mv_dst: np.ndarray,
    mv_label: np.ndarray,
    pass_row: np.ndarray,
    pass_vec: np.ndarray,
    out: np.ndarray,
    node_pick: np.ndarray,
    node_value: np.ndarray,
    node_optimal: np.ndarray,
    state_choice: np.ndarray,
    state_choices: np.ndarray,
    fixed_pick: np.ndarray,
    fixed_choice: np.ndarray,
    acc: np.ndarray,
    best_vec: np.ndarray,
) -> None:
    """Fill ``out[mask]`` (payoff vectors) for every mask of a block.

    ``mover``: the entry the mover maximises. ``alive[mask]``: the mover still rolls there;
    otherwise the mask is terminal and worth ``terminal[term_row[mask]]``. ``ch_start``: each
    mask's chance rows (grouped by choice); ``mv_start``: each node's moves (``mv_dst`` the
    mask left, label -1 for the pass of a stuck roll, worth ``pass_vec[pass_row[mask]]``).

    Besides ``out``: each node's chosen move row (``node_pick``), its value to the mover and how
    many moves tie for it; each mask's chosen number of dice and how many it may choose from
    (arrays of the one-player graph's nodes and masks, filled for the masks where it rolls).

    Ties, for the mover, within the shared tolerance (1e-12 relative): between moves, the largest
    label (the move holding the highest tile where two differ); between choices, the largest
    (more dice). Others' payoffs follow the move so chosen.

    A mover who follows a fixed policy (``fixed_pick``: a move row of every node of the
    one-player graph, ``fixed_choice``: the dice of every mask; both empty when the mover
    optimises) plays it instead: the block is then priced, not solved, for the mover.

    ``acc`` and ``best_vec``: room for one payoff vector each (the caller's: an allocation
    here would compile numpy's allocator for its type too, on a first run).
    """
    fixed = fixed_pick.shape[0] > 0
    n_masks = alive.shape[0]
    width = out.shape[1]
    for mask in range(n_masks):
        if not alive[mask]:
            # entry by entry: numba's slice assignment from an array brings in its
            # shape-mismatch message, whose string formatting compiles for seconds
            for j in range(width):
                out[mask, j] = terminal[term_row[mask], j]
            continue
        row = ch_start[mask]
        end = ch_start[mask + 1]
        have = False
        best_val = 0.0
        best_choice = -1
        n_choices = 0
        while row < end:
            choice = ch_choice[row]
            n_choices += 1
            if fixed and choice != fixed_choice[mask]:
                while row < end and ch_choice[row] == choice:
                    row += 1
                continue
            acc[:] = 0.0
            while row < end and ch_choice[row] == choice:
                node = ch_node[row]
                p = ch_prob[row]
                if fixed:
                    pick = fixed_pick[node]
                    ties = 1
                    if mv_label[pick] < 0:
                        top = pass_vec[pass_row[mask], mover]
                    else:
                        top = out[mv_dst[pick], mover]
                else:  # the mover's best move (ties: the largest label), inline: one kernel
                    passed = pass_vec[pass_row[mask], mover]
                    top = -np.inf
                    for m in range(mv_start[node], mv_start[node + 1]):
                        v = passed if mv_label[m] < 0 else out[mv_dst[m], mover]
                        if v > top:
                            top = v
                    tol = tie_tolerance(top)
                    pick = -1
                    ties = 0
                    for m in range(mv_start[node], mv_start[node + 1]):
                        v = passed if mv_label[m] < 0 else out[mv_dst[m], mover]
                        if abs(v - top) <= tol:
                            ties += 1
                            if pick < 0 or mv_label[m] > mv_label[pick]:
                                pick = m
                node_pick[node] = pick
                node_value[node] = top
                node_optimal[node] = ties
                if mv_label[pick] < 0:
                    for j in range(width):
                        acc[j] += p * pass_vec[pass_row[mask], j]
                else:
                    dst = mv_dst[pick]
                    for j in range(width):
                        acc[j] += p * out[dst, j]
                row += 1
            value = acc[mover]
            if not have:
                take = True
            else:
                near = abs(value - best_val) <= tie_tolerance(max(value, best_val))
                take = choice > best_choice if near else value > best_val
            if take:
                have = True
                best_val = value
                best_choice = choice
                for j in range(width):
                    best_vec[j] = acc[j]
        for j in range(width):
            out[mask, j] = best_vec[j]
        state_choice[mask] = best_choice
        state_choices[mask] = n_choices
