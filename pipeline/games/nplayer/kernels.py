"""The compiled solve of one turn (numba): every player's payoff from every mask of one block.

A block is one seat facing one context (the best score so far and how many players share it);
its masks are solved in increasing order (every move shuts tiles, so it leads to a smaller
mask), each to a vector of payoffs (see :mod:`pipeline.games.nplayer.game` for its layout).
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.compiled import inline_kernel, kernel
from pipeline.solve.ties import best_of, pick


def room(
    ch_choice: np.ndarray, mv_start: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The scratch arrays of :func:`solve_block` for a one-player graph's chance rows and moves
    (a kernel allocates none: :mod:`pipeline.solve.compiled`): each choice's payoffs, value to
    the mover and label (distinct numbers: at most the largest plus one), and one node's move
    values."""
    most = int(np.max(ch_choice)) + 1 if ch_choice.shape[0] else 1
    moves = int(np.max(np.diff(mv_start))) if mv_start.shape[0] > 1 else 1
    return (
        np.zeros((most, width)),
        np.zeros(most),
        np.zeros(most, dtype=np.int64),
        np.zeros(max(moves, 1)),
    )


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
    choice_val: np.ndarray,
    choice_lab: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """Fill ``out[mask]`` (payoff vectors) for every mask of a block.

    ``mover``: the entry the mover maximises. ``alive[mask]``: the mover still rolls there;
    otherwise the mask is terminal and worth ``terminal[term_row[mask]]``. ``ch_start``: each
    mask's chance rows (grouped by choice); ``mv_start``: each node's moves (``mv_dst`` the
    mask left, label -1 for the pass of a stuck roll, worth ``pass_vec[pass_row[mask]]``).

    Besides ``out``: each node's chosen move row (``node_pick``), its value to the mover and how
    many moves tie for it; each mask's chosen number of dice and how many it may choose from
    (arrays of the one-player graph's nodes and masks, filled for the masks where it rolls).

    Ties, for the mover, by the shared tie rule (:func:`pipeline.solve.tolerance.pick`):
    between moves, the largest label (the move holding the highest tile where two differ);
    between choices, the largest (more dice). Others' payoffs follow the move so chosen.

    A mover who follows a fixed policy (``fixed_pick``: a move row of every node of the
    one-player graph, ``fixed_choice``: the dice of every mask; both empty when the mover
    optimises) plays it instead: the block is then priced, not solved, for the mover.

    ``acc``, ``choice_val``, ``choice_lab`` and ``scratch``: the caller's room (:func:`room`).
    """
    fixed = fixed_pick.shape[0] > 0
    n_masks = alive.shape[0]
    width = out.shape[1]
    for mask in range(n_masks):
        if not alive[mask]:
            for j in range(width):
                out[mask, j] = terminal[term_row[mask], j]
            continue
        row = ch_start[mask]
        end = ch_start[mask + 1]
        n_choices = 0
        seen = 0
        while row < end:
            choice = ch_choice[row]
            n_choices += 1
            if fixed and choice != fixed_choice[mask]:
                while row < end and ch_choice[row] == choice:
                    row += 1
                continue
            here = acc[seen]
            for j in range(width):
                here[j] = 0.0
            while row < end and ch_choice[row] == choice:
                node = ch_node[row]
                p = ch_prob[row]
                if fixed:
                    pick_row = fixed_pick[node]
                    ties = 1
                    if mv_label[pick_row] < 0:
                        top = pass_vec[pass_row[mask], mover]
                    else:
                        top = out[mv_dst[pick_row], mover]
                else:
                    pick_row, top, ties = _best_move(
                        node, mask, mover, out, mv_start, mv_dst, mv_label, pass_row, pass_vec,
                        scratch,
                    )  # fmt: skip
                node_pick[node] = pick_row
                node_value[node] = top
                node_optimal[node] = ties
                if mv_label[pick_row] < 0:
                    for j in range(width):
                        here[j] += p * pass_vec[pass_row[mask], j]
                else:
                    dst = mv_dst[pick_row]
                    for j in range(width):
                        here[j] += p * out[dst, j]
                row += 1
            choice_val[seen] = here[mover]
            choice_lab[seen] = choice
            seen += 1
        chosen, _ = pick(choice_val, choice_lab, 0, seen, best_of(choice_val, 0, seen, True))
        for j in range(width):
            out[mask, j] = acc[chosen, j]
        state_choice[mask] = choice_lab[chosen]
        state_choices[mask] = n_choices


@inline_kernel  # once per node: compiled as part of the block solve, not on its own
def _best_move(
    node: int,
    mask: int,
    mover: int,
    out: np.ndarray,
    mv_start: np.ndarray,
    mv_dst: np.ndarray,
    mv_label: np.ndarray,
    pass_row: np.ndarray,
    pass_vec: np.ndarray,
    values: np.ndarray,
) -> tuple[int, float, int]:
    """The mover's best move row at ``node`` (the tie rule's pick: the largest label), its
    value to the mover and how many moves tie for it; ``values``: room for the node's moves."""
    lo, hi = mv_start[node], mv_start[node + 1]
    passed = pass_vec[pass_row[mask], mover]
    for m in range(lo, hi):
        values[m - lo] = passed if mv_label[m] < 0 else out[mv_dst[m], mover]
    top = best_of(values, 0, hi - lo, True)
    chosen, ties = pick(values, mv_label[lo:hi], 0, hi - lo, top)
    return lo + chosen, top, ties
