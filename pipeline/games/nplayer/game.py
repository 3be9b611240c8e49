"""Shut the Box for N players in turn: each plays a whole turn from a full box, lowest score wins.

Rules. Players 1..N play in turn, each rolling until stuck under the one-player dice rules
(:class:`~pipeline.games.nplayer.rules.NPlayerRules`). A player who shuts every tile wins at once
and the game ends. Otherwise the player's score is the sum of their open tiles (or the digital
score); after all N have played, the lowest score wins, and a tie for the lowest splits the win
equally (payoff ``share``). Payoff ``stake``: every player stakes 1 and the winners share the
pot (net ``N * share - 1``); a player who shuts is paid ``shut_multiplier`` stakes by everyone
else. With two players: the lower score wins the stake, a tie returns it, a shut wins double.

States. The mover's seat k, their open tiles, and what matters of the earlier players' scores:
the best (lowest) so far and how many players share it. The canonical id is
``block * 2**tiles + mask`` (``mask``: bit i-1 set when tile i is open), with ``block`` 0 for
seat 1 and ``(best * (N-1) + count - 1) * (N-1) + k - 2`` for seat k >= 2: with two players
``block`` is player 1's score, the ids of the two-player course game. The graph holds, for every
seat k >= 2, every mask for every *possible* best score (a score some turn can end with) and
every count 1..k-1. With the share payoff, a last player whose score is already below the best
has won (a terminal state).

Values. The graph's value of a state is the mover's expected payoff: the generic solver picks
the moves. Every player's payoff under that play comes from the compiled solve of
:mod:`pipeline.games.nplayer.kernels`, one vector per state with entries ``[holder, beaten,
seat 1, ..., seat N]``: each earlier player holding the best score gets ``holder``, each earlier
player already beaten gets ``beaten``, and seats k..N their own entry (entries of seats before
the mover are unused). A stuck seat k < N passes to seat k+1's full box with the new best: with
two players the pass is worth ``total - V(next)`` (the payoffs sum to 1, or 0 for stakes, as the
course's tables always had it); with more, a fixed payoff (the compiled solve's entry for the
mover) to the next player's start. The last player's pass is the final payoff.

Tie rule. When moves give the mover the same payoff (within 1e-12, relative), the move holding
the highest tile where two differ is played (the largest tile bitmask); between numbers of dice,
the larger. Others' payoffs follow that move; the rule is shared with every other game.

Ranks. Seat k's states have rank ``(N - k) * (tiles + 1) + popcount(mask)``: every move shuts a
tile, and a pass goes to a later seat, so every edge goes down in rank.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.games.base import Game, LegalMoves, Streamed, Stuck
from pipeline.games.nplayer.rules import (
    BEATEN,
    FIRST_SEAT,
    HOLDER,
    MAX_PLAYERS,
    NPlayerRules,
    ranges_text,  # noqa: F401  (re-exported: the family's face)
)
from pipeline.games.shutbox.game import ShutTheBox
from pipeline.graph import NO_STATE, PASS, Graph

if TYPE_CHECKING:  # polars loads lazily: the ShutTheBox command answers without it
    import polars as pl


class NPlayer(Game):
    """The N-player game for a :class:`NPlayerRules`; values are the mover's expected payoff."""

    def __init__(self, rules: NPlayerRules | None = None) -> None:
        self.r = rules or NPlayerRules()
        self.base = ShutTheBox(self.r.box, rank_order=False)
        self.objective = "wins" if self.r.payoff == "share" else "stake"
        self.n = self.r.players

    def rules(self) -> dict[str, Any]:
        """The rule set as plain data."""
        return self.r.to_dict()

    @property
    def n_masks(self) -> int:
        """Number of tile masks, 2**tiles."""
        return 1 << self.r.box.tiles

    @property
    def full(self) -> int:
        """Mask of the box with every tile open."""
        return self.n_masks - 1

    def width(self, ext: bool = False) -> int:
        """Length of a payoff vector: holder, beaten, one entry per seat; with ``ext`` the
        outcome probabilities too (each seat's shut, each seat's win on points, the earlier
        holders' win as they stand, a tie)."""
        return FIRST_SEAT + (3 * self.n + 2 if ext else self.n)

    def outcome_index(self) -> dict[str, int]:
        """Where the outcome probabilities sit in an extended vector."""
        shut = FIRST_SEAT + self.n
        return {
            "shut": shut,
            "points": shut + self.n,
            "held": shut + 2 * self.n,
            "tie": shut + 2 * self.n + 1,
        }

    @property
    def total(self) -> float:
        """What the payoffs of a game sum to: 1 (the win) or 0 (stakes change hands)."""
        return 1.0 if self.r.payoff == "share" else 0.0

    def start_state(self) -> int:
        """Player 1 with every tile open."""
        return self.full

    def state_id(
        self, mask: int, p1_score: int = 0, seat: int | None = None, count: int = 1
    ) -> int:
        """Canonical id of a state: player 1's (no score) or a later seat's with the best score
        (two players: the second player's, facing player 1's score)."""
        if seat is None:
            seat = 1 if p1_score == 0 else 2
        return self.r.block_of(seat, p1_score, count) * self.n_masks + mask

    def split_ids(self, state_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mask, best score so far) of each state id; 0 for player 1 (two players: the mask
        and player 1's score, as the course's tables number them)."""
        mask, _, best, _ = self.position(state_id)
        return mask, best

    def position(
        self, state_id: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mask, seat, best score, tie count) of each state id; best and count 0 for seat 1."""
        ids = np.asarray(state_id, dtype=np.int64)
        block = ids >> self.r.box.tiles
        m = self.n - 1
        later = block > 0
        seat = np.where(later, block % m + 2, 1)
        count = np.where(later, (block // m) % m + 1, 0)
        best = np.where(later, block // (m * m), 0)
        return ids & self.full, seat, best, count

    def next_start(self, state_id: int) -> int | None:
        """Where play goes when the mover is stuck in ``state_id``: the next player's full box,
        facing the new best score; None after the last player (the game is over)."""
        fields = self.state_fields(state_id)  # one state in plain Python (numpy: 5x longer)
        seat, best, count = fields["player"] or 1, fields["best_score"] or 0, fields["best_count"]
        count = count or 0
        mask = state_id & self.full
        if seat == self.n:
            return None
        score = self.base.final_score(mask)  # one mask in plain Python (no kernel)
        if seat == 1 or score < best:
            best, count = score, 1
        elif score == best:
            count += 1
        return self.r.block_of(seat + 1, best, count) * self.n_masks + self.full

    # -- rules -------------------------------------------------------------------------------

    @cached_property
    def one_player_graph(self) -> Graph:
        """Rolls and moves of every mask, shared by every player (state index = mask)."""
        return self.base.graph()

    @cached_property
    def mask_scores(self) -> np.ndarray:
        """The score of every mask (its open sum, or its digital score)."""
        return self.base.scores(np.arange(self.n_masks, dtype=np.int64))

    @cached_property
    def possible_scores(self) -> np.ndarray:
        """Sorted scores a turn can end with (:meth:`NPlayerRules.possible_scores`), int64."""
        return np.array(self.r.possible_scores(), dtype=np.int64)

    def score_rows(self, scores: np.ndarray) -> np.ndarray:
        """The row of each score among :attr:`possible_scores` (the rows of
        :meth:`pass_vectors`; a score no turn ends with reads a neighbour, never used)."""
        possible = self.possible_scores
        return np.searchsorted(possible, scores).clip(0, max(len(possible) - 1, 0))

    def next_blocks(self, seat: int, best: int, count: int, scores: np.ndarray) -> np.ndarray:
        """The block of the next seat after ``seat`` (facing ``best`` held by ``count``
        players) is stuck with each of ``scores``: below the best, the mover holds it alone;
        level with it, one more holder; above it, the best stands."""
        below = scores < best if seat > 1 else np.ones(scores.shape[0], dtype=bool)
        tie = ~below & (scores == best)
        nxt_best = np.where(below, scores, best)
        nxt_count = np.where(below, 1, np.where(tie, count + 1, count))
        return (nxt_best * (self.n - 1) + nxt_count - 1) * (self.n - 1) + seat - 1

    def contexts(self, seat: int) -> list[tuple[int, int]]:
        """(best score, tie count) pairs seat ``seat`` can face; (0, 0) for seat 1."""
        if seat == 1:
            return [(0, 0)]
        return [(b, c) for b in self.possible_scores.tolist() for c in range(1, seat)]

    def blocks(self) -> list[tuple[int, int, int, int]]:
        """Every (block number, seat, best, count), in block order (so state ids ascend)."""
        out = [
            (self.r.block_of(k, b, max(c, 1)), k, b, c)
            for k in range(1, self.n + 1)
            for b, c in self.contexts(k)
        ]
        return sorted(out)

    # -- the compiled solve of every player's payoff ---------------------------------------------

    def alive(self, seat: int, best: int, played_out: bool = False) -> np.ndarray:
        """Masks where the mover still rolls: not shut, and (share payoff, last seat) not
        already below the best score (that player has won), unless every turn is
        ``played_out`` (the last player rolls on until stuck: it changes no payoff of optimal
        play, but a player following another policy, such as chasing a shut, may roll on)."""
        alive = np.arange(self.n_masks) != 0
        if seat == self.n and seat > 1 and self.r.payoff == "share" and not played_out:
            alive &= self.mask_scores >= best
        return alive

    def terminal_vector(self, seat: int, ext: bool = False, shut: bool = True) -> np.ndarray:
        """Payoffs where seat ``seat``'s turn is over at once: a shut, or (share payoff, last
        player, ``shut`` False) a score already below the best: a win all the same."""
        vec = np.zeros(self.width(ext))
        me = FIRST_SEAT + seat - 1
        if self.r.payoff == "share":
            vec[me] = 1.0
        else:
            mult = float(self.r.shut_multiplier)
            vec[: FIRST_SEAT + self.n] = -mult
            vec[me] = mult * (self.n - 1)
            vec[FIRST_SEAT:me] = 0.0  # unused entries
        if ext:
            at = self.outcome_index()
            vec[(at["shut"] if shut else at["points"]) + seat - 1] = 1.0
        return vec

    def terminal_rows(self, seat: int, ext: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(terminal vectors, each mask's row among them): the shut box, the rest."""
        rows = np.stack([self.terminal_vector(seat, ext), self.terminal_vector(seat, ext, False)])
        which = (np.arange(self.n_masks) != 0).astype(np.int64)
        return rows, which

    def final_payoff(
        self, holders: int, mover_holds: bool, seat: int, ext: bool = False
    ) -> np.ndarray:
        """Payoffs once every player has played: ``holders`` players share the lowest score."""
        vec = np.zeros(self.width(ext))
        share = 1.0 / holders
        if self.r.payoff == "share":
            vec[HOLDER] = share
        else:
            vec[: FIRST_SEAT + self.n] = -1.0
            vec[HOLDER] = self.n * share - 1.0
            vec[FIRST_SEAT : FIRST_SEAT + seat - 1] = 0.0
        vec[FIRST_SEAT + seat - 1] = vec[HOLDER] if mover_holds else vec[BEATEN]
        return vec

    def pass_vectors(
        self,
        seat: int,
        best: int,
        count: int,
        starts: dict[tuple[int, int], np.ndarray],
        ext: bool = False,
    ) -> np.ndarray:
        """Payoffs of seat ``seat`` stuck with each possible score (rows: possible_scores), from
        the next seat's start vectors ``starts[(best, count)]`` (the last seat: final).

        Stuck below the best, the mover becomes its only holder and the earlier holders are
        beaten; level with it, one more holder; above it, beaten."""
        scores = self.possible_scores
        me = FIRST_SEAT + seat - 1
        at = self.outcome_index()
        below = np.ones(scores.shape[0], dtype=bool) if seat == 1 else scores < best
        tie = ~below & (scores == best)
        if seat == self.n:
            vb = self.final_payoff(1, True, seat, ext)
            vb[HOLDER] = vb[BEATEN]
            vt = self.final_payoff(count + 1, True, seat, ext)
            va = self.final_payoff(max(count, 1), False, seat, ext)
            if ext:
                vb[at["points"] + seat - 1] = vt[at["tie"]] = va[at["held"]] = 1.0
            rows_below = np.broadcast_to(vb, (scores.shape[0], vb.shape[0]))
        else:
            nxt = self._below_rows(starts)
            rows_below = nxt.copy()
            rows_below[:, HOLDER] = nxt[:, BEATEN]
            rows_below[:, me] = nxt[:, HOLDER]
            if ext:
                rows_below[:, at["points"] + seat - 1] = nxt[:, at["held"]]
                rows_below[:, at["held"]] = 0.0
            vt = va = rows_below[0]
            if seat > 1:
                t = starts[(best, count + 1)]
                vt = t.copy()
                vt[me] = t[HOLDER]
                if ext:
                    vt[at["tie"]] = t[at["tie"]] + t[at["held"]]
                    vt[at["held"]] = 0.0
                a = starts[(best, count)]
                va = a.copy()
                va[me] = a[BEATEN]
        out = np.where(below[:, None], rows_below, np.where(tie[:, None], vt, va))
        out[:, FIRST_SEAT:me] = 0.0
        if seat == 1:
            out[:, HOLDER] = out[:, BEATEN] = 0.0
        return out

    def _below_rows(self, starts: dict[tuple[int, int], np.ndarray]) -> np.ndarray:
        """The next seat's start vectors facing each possible score held by one player (the
        mover's own score, once below the best), stacked; kept in ``starts`` under the key
        (-1, -1) for the seat's other blocks."""
        if (-1, -1) not in starts:
            rows = [starts[(s, 1)] for s in self.possible_scores.tolist()]
            starts[(-1, -1)] = np.stack(rows)
        return starts[(-1, -1)]

    @cached_property
    def _csr(self) -> dict[str, np.ndarray]:
        """The one-player graph as per-mask arrays for the compiled solve."""
        b = self.one_player_graph
        ch_start = np.searchsorted(b.ch_state, np.arange(self.n_masks + 1)).astype(np.int64)
        return {
            "ch_start": ch_start,
            "ch_choice": b.ch_choice.astype(np.int64),
            "ch_prob": b.ch_prob.astype(np.float64),
            "ch_node": b.ch_node.astype(np.int64),
            "mv_start": b.move_starts(),
            "mv_dst": b.mv_dst.astype(np.int64),
            "mv_label": b.mv_label.astype(np.int64),
        }

    @cached_property
    def payoffs(self) -> tuple[np.ndarray, np.ndarray]:
        """(block numbers, payoff vectors [block, mask, entry]) of every state, solved seat by
        seat from the last."""
        out = np.zeros((len(self._position), self.n_masks, self.width()))
        for _ in self._solve_blocks(False, out=out):
            pass
        return self._numbers, out

    def outcomes(self, chaser: int = 0) -> dict[str, list[float]]:
        """Probabilities of how the game ends under optimal play, from player 1's full box:
        ``shut`` and ``points`` (one per seat: that player shuts, or wins alone on points) and
        ``tie`` (the lowest score shared), with every seat's expected ``payoff``. With
        ``chaser`` k, player k maximises their chance of shutting the box instead: they play
        the one-player policy that does (:attr:`shut_chaser`), priced by :meth:`price`."""
        if chaser:
            return self.price({chaser: self.shut_chaser})
        return self.price({})

    @cached_property
    def shut_chaser(self) -> tuple[np.ndarray, np.ndarray]:
        """The one-player policy that maximises P(shut) (ties: the largest label, two dice):
        its move row at every node and its dice in every mask of the one-player graph."""
        from pipeline.games.shutbox.rule_search import objective_graph
        from pipeline.solve.rank_order import best_moves, solve_rank_order

        g = objective_graph(self.base, self.one_player_graph, "shut")
        solution = solve_rank_order(g)
        rows, _ = best_moves(g, solution)
        return rows.astype(np.int64), solution.choice.astype(np.int64)

    def price(self, policies: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, list[float]]:
        """:meth:`outcomes` when the seats of ``policies`` follow the given one-player policies
        (seat -> (move row of every node, dice of every mask) of the one-player graph, as
        :mod:`pipeline.games.shutbox.rule_keys` makes for a rule) and the others play for
        their payoff, knowing it. With a policy given, every turn is played out (a last player
        already below the best score rolls on: the policy may want to), which changes nothing
        for optimal play."""
        *_, (_, _, last) = self._solve_blocks(True, policies)  # player 1's block comes last
        start = last[self.full]
        at = self.outcome_index()
        n = self.n
        return {
            "payoff": start[FIRST_SEAT : FIRST_SEAT + n].tolist(),
            "shut": start[at["shut"] : at["shut"] + n].tolist(),
            "points": start[at["points"] : at["points"] + n].tolist(),
            "tie": [float(start[at["tie"]])],
        }

    def _solve_blocks(
        self,
        ext: bool,
        fixed: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
        out: np.ndarray | None = None,
        record: dict[str, np.ndarray] | None = None,
    ) -> Iterator[tuple[int, tuple[int, int, int], np.ndarray]]:
        """Solve every block, last seat first, yielding (block number, (seat, best, count),
        payoff vectors of its masks) after each; player 1's block comes last. The vectors go
        into ``out`` at the block's position when given (else a scratch array, overwritten by
        the next block); ``record`` (see :meth:`new_record`) receives each block's choices.
        The seats of ``fixed`` follow the given one-player policies (see :meth:`price`), on the
        game where every turn is played out."""
        from pipeline.games.nplayer import kernels  # numba loads only to solve

        csr = self._csr
        row_of = self.score_rows(self.mask_scores)
        if record is None:
            record = self.new_record()
        scratch = np.zeros((self.n_masks, self.width(ext)))
        room = kernels.room(csr["ch_choice"], csr["mv_start"], self.width(ext))
        starts: dict[tuple[int, int], np.ndarray] = {}
        fixed = fixed or {}
        free = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        for seat in range(self.n, 0, -1):
            mine: dict[tuple[int, int], np.ndarray] = {}
            terminal, term_row = self.terminal_rows(seat, ext)
            for best, count in self.contexts(seat):
                number = self.r.block_of(seat, best, max(count, 1))
                target = scratch if out is None else out[self._position[number]]
                pick, choice = fixed.get(seat, free)
                kernels.solve_block(
                    FIRST_SEAT + seat - 1,
                    self.alive(seat, best, played_out=bool(fixed)),
                    terminal,
                    term_row,
                    csr["ch_start"],
                    csr["ch_choice"],
                    csr["ch_prob"],
                    csr["ch_node"],
                    csr["mv_start"],
                    csr["mv_dst"],
                    csr["mv_label"],
                    row_of,
                    self.pass_vectors(seat, best, count, starts, ext),
                    target,
                    record["node_pick"],
                    record["node_value"],
                    record["node_optimal"],
                    record["state_choice"],
                    record["state_choices"],
                    pick,
                    choice,
                    *room,
                )
                mine[(best, count)] = target[self.full].copy()
                yield number, (seat, best, count), target
            starts = mine

    def new_record(self) -> dict[str, np.ndarray]:
        """Arrays for the compiled solve's choices of one block (by one-player node and mask)."""
        nodes = self.one_player_graph.node_state.shape[0]
        return {
            "node_pick": np.full(nodes, -1, dtype=np.int64),
            "node_value": np.zeros(nodes),
            "node_optimal": np.zeros(nodes, dtype=np.int64),
            "state_choice": np.full(self.n_masks, -1, dtype=np.int64),
            "state_choices": np.zeros(self.n_masks, dtype=np.int64),
        }

    def shares_of(self, state_id: np.ndarray) -> np.ndarray:
        """Payoff vectors [state, entry] of the given state ids."""
        numbers, vectors = self.payoffs
        block = np.asarray(state_id, dtype=np.int64) >> self.r.box.tiles
        where = np.searchsorted(numbers, block)
        return vectors[where, np.asarray(state_id) & self.full]

    def summary(self, graph: Graph | None, solution: Any) -> pl.DataFrame:
        """Headline figures: each seat's expected payoff at the start, how the game ends (each
        seat's shut and win on points, a tie), and what a player who maximises P(shut) instead
        gets and loses."""
        import polars as pl

        rows: list[tuple[str, int | None, float]] = []
        found = self.outcomes()
        for name, key in (
            ("expected_payoff", "payoff"),
            ("p_shut", "shut"),
            ("p_points", "points"),
        ):
            rows += [(name, k + 1, v) for k, v in enumerate(found[key])]
        rows.append(("p_tie", None, found["tie"][0]))
        for seat in range(1, self.n + 1):
            chased = self.outcomes(chaser=seat)["payoff"][seat - 1]
            rows.append(("payoff_shut_chaser", seat, chased))
            rows.append(("loss_shut_chaser", seat, found["payoff"][seat - 1] - chased))
        return pl.DataFrame(
            {
                "figure": [r[0] for r in rows],
                "objective": [self.objective] * len(rows),
                "parameter": pl.Series([r[1] for r in rows], dtype=pl.Int32),
                "value": pl.Series([r[2] for r in rows], dtype=pl.Float64),
            }
        )

    # -- the graph ---------------------------------------------------------------------------

    def graph(self) -> Graph:
        """One block of masks per (seat, best score, tie count), in id order."""
        parts: dict[str, list[np.ndarray]] = {}
        n_nodes = 0
        for block, seat, best, count in self.blocks():
            arrays = self._block(block, seat, best, count, n_nodes)
            for key, arr in arrays.items():
                parts.setdefault(key, []).append(arr)
            n_nodes += arrays["node_state"].shape[0]

        joined: dict[str, Any] = {key: np.concatenate(arrays) for key, arrays in parts.items()}
        return Graph(
            **joined,
            maximise=True,
            meta={"possible_scores": self.possible_scores.tolist()},
        )

    def _block(
        self, block: int, seat: int, best: int, count: int, first_node: int
    ) -> dict[str, np.ndarray]:
        """Graph arrays of one block, whose states are ``block * 2**tiles + mask`` (graph
        indices from ``block``'s position) and whose nodes are numbered from ``first_node``."""
        b, f = self.one_player_graph, self.n_masks
        position = self._position[block]
        masks = np.arange(f, dtype=np.int64)
        scores = self.mask_scores
        alive = self.alive(seat, best)
        keep_node = alive[b.node_state]
        node_map = np.where(keep_node, np.cumsum(keep_node) - 1 + first_node, -1)
        keep_ch = alive[b.ch_state]
        keep_mv = keep_node[b.mv_node]
        mv_pass = b.mv_label[keep_mv] == PASS
        mv_score = scores[b.node_state[b.mv_node[keep_mv]]]
        dst = np.where(mv_pass, NO_STATE, position * f + b.mv_dst[keep_mv])
        scale = np.where(mv_pass, 0.0, 1.0)
        if seat < self.n:  # stuck: the next seat plays from the full box
            nxt_pos = np.searchsorted(self._numbers, self.next_blocks(seat, best, count, mv_score))
            dst = np.where(mv_pass, nxt_pos * f + self.full, dst)
        if seat < self.n and self.n == 2:  # constant sum: the mover gets what the other does not
            scale = np.where(mv_pass, -1.0, scale)
            offset = np.where(mv_pass, self.total, 0.0)
        else:  # a fixed payoff to the next seat's start; the last player's: the final payoff
            starts = self._starts(seat + 1) if seat < self.n else {}
            vec = self.pass_vectors(seat, best, count, starts)
            row = self.score_rows(mv_score)
            offset = np.where(mv_pass, vec[row, FIRST_SEAT + seat - 1], 0.0)
        terminal = np.where(alive, np.nan, self.terminal_vector(seat)[FIRST_SEAT + seat - 1])
        return {
            "state_id": block * f + masks,
            "rank": np.bitwise_count(masks.astype(np.uint64)).astype(np.int64)
            + (self.n - seat) * (self.r.box.tiles + 1),
            "terminal": terminal,
            "ch_state": position * f + b.ch_state[keep_ch],
            "ch_choice": b.ch_choice[keep_ch],
            "ch_count": b.ch_count[keep_ch],
            "ch_denom": b.ch_denom[keep_ch],
            "ch_node": node_map[b.ch_node[keep_ch]],
            "node_state": position * f + b.node_state[keep_node],
            "node_roll": b.node_roll[keep_node],
            "mv_node": node_map[b.mv_node[keep_mv]],
            "mv_dst": dst,
            "mv_scale": scale,
            "mv_offset": offset,
            "mv_label": b.mv_label[keep_mv],
        }

    @cached_property
    def _position(self) -> dict[int, int]:
        """Block number -> its position among the blocks (graph index / 2**tiles)."""
        return {blk: i for i, (blk, *_) in enumerate(self.blocks())}

    @cached_property
    def _numbers(self) -> np.ndarray:
        """Every block number, increasing (the order of the blocks)."""
        return np.array(sorted(self._position), dtype=np.int64)

    def _starts(self, seat: int) -> dict[tuple[int, int], np.ndarray]:
        """Seat ``seat``'s payoff vectors at the full box, by (best score, tie count)."""
        cache: dict[int, dict[tuple[int, int], np.ndarray]] = self.__dict__.setdefault(
            "_starts_cache", {}
        )
        if seat not in cache:
            _, vectors = self.payoffs
            cache[seat] = {
                (b, c): vectors[self._position[self.r.block_of(seat, b, c)], self.full]
                for b, c in self.contexts(seat)
            }
        return cache[seat]

    def stream(self, tables: Sequence[str]) -> Streamed:
        """The graph-free build (:mod:`pipeline.games.nplayer.stream`): states, policy and
        moves, a block at a time, straight from the compiled solve."""
        from pipeline.games.nplayer import stream

        return stream.streamed(self, tables)

    # -- answers (pipeline.answer): a seat's moves are the one-player box's on its mask --------

    @cached_property
    def answer_columns(self) -> tuple[str, ...]:  # type: ignore[override]
        """Every player's expected payoff (the shares), beside the mover's value."""
        return ("share_holder", "share_beaten", *(f"share_{k}" for k in range(1, self.n + 1)))

    def roll_chances(self, state_id: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        """The one-player rules' dice on the mover's open tiles; none where the mover has won
        already (:meth:`alive`: the last seat below the best score, for a share of the win)."""
        mask = state_id & self.full
        fields = self.state_fields(state_id)
        last = fields["player"] == self.n and self.n > 1 and self.r.payoff == "share"
        if last and self.base.final_score(mask) < (fields["best_score"] or 0):
            return []
        return self.base.roll_chances(mask)

    def legal_moves(self, state_id: int, rolls: Sequence[int]) -> LegalMoves:
        """The one-player box's moves on the mover's tiles; the seat and scores stay."""
        found = self.base.legal_moves(state_id & self.full, rolls)
        return LegalMoves(found.roll, found.label, state_id ^ found.label)

    def move_tiles(self, label: int) -> list[int]:
        """The tiles a move shuts."""
        return self.base.move_tiles(label)

    def state_text(self, state_id: int) -> str:
        """The mover's open tiles."""
        return self.base.state_text(state_id & self.full)

    def position_fields(self, state_ids: np.ndarray) -> dict[str, np.ndarray]:
        """The seat to move, the best score before it and how many players share it (0 for
        player 1, who faces none)."""
        _, seat, best, count = self.position(state_ids)
        return {"player": seat, "best_score": best, "best_count": count}

    def state_fields(self, state_id: int) -> dict[str, int | None]:
        """:meth:`position_fields` of one state in plain Python (best score and count None for
        player 1)."""
        block = state_id >> self.base.r.tiles
        if block == 0:
            return {"player": 1, "best_score": None, "best_count": None}
        m = self.n - 1
        return {
            "player": block % m + 2,
            "best_score": block // (m * m),
            "best_count": (block // m) % m + 1,
        }

    def stuck(self, state_id: int) -> Stuck:
        """Stuck, the turn passes to the next seat's full box, facing the new best score; the
        mover becomes an earlier player there, whose payoff the next state's shares hold (the
        holder's when the mover's score is the best, else the beaten one's; with two players
        the total less the other's value, as the course's tables have it). The last seat's
        stuck roll ends the game with the final payoff (:meth:`final_payoff`)."""
        fields = self.state_fields(state_id)
        seat, best, count = fields["player"] or 1, fields["best_score"] or 0, fields["best_count"]
        score = self.base.final_score(state_id & self.full)
        below = seat == 1 or score < best
        tie = not below and score == best
        if seat < self.n:
            nxt = self.next_start(state_id)
            if self.n == 2:
                return Stuck("pass", nxt, None, "value", self.total, -1.0)
            return Stuck("pass", nxt, None, "share_holder" if below or tie else "share_beaten")
        holders = 1 if below else (count or 0) + 1 if tie else max(count or 0, 1)
        payoff = self.final_payoff(holders, below or tie, seat)
        return Stuck("end", None, float(payoff[FIRST_SEAT + seat - 1]))

    # -- description -------------------------------------------------------------------------

    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Columns tiles, open_tiles, player, players, p1_score (two players), best_score,
        best_count, n_open, open_sum, score, and every player's payoff (share_*)."""
        import polars as pl

        mask, seat, best, count = self.position(state_id)
        vec = self.shares_of(state_id)
        later = seat > 1
        # p1_score (Int16) is the course's column: two players with sum scoring
        p1 = best if self.n == 2 and self.r.box.scoring == "sum" else np.zeros_like(best)
        shares: dict[str, pl.Series] = {
            "share_holder": pl.Series(np.where(later, vec[:, HOLDER], np.nan)).fill_nan(None),
            "share_beaten": pl.Series(
                np.where(later & (seat > count + 1), vec[:, BEATEN], np.nan)
            ).fill_nan(None),
        }
        for k in range(1, MAX_PLAYERS + 1):
            col = vec[:, FIRST_SEAT + k - 1] if k <= self.n else np.full(len(seat), np.nan)
            shares[f"share_{k}"] = pl.Series(np.where(seat <= k, col, np.nan)).fill_nan(None)
        return self.base._tile_columns(mask).with_columns(
            player=pl.Series(seat, dtype=pl.Int8),
            players=pl.lit(self.n, dtype=pl.Int8),
            p1_score=pl.Series(p1, dtype=pl.Int16).replace(0, None),
            best_score=pl.Series(best, dtype=pl.Int64).replace(0, None),
            best_count=pl.Series(count, dtype=pl.Int8).replace(0, None),
            n_open=pl.Series(np.bitwise_count(mask.astype(np.uint64)).astype(np.int16)),
            open_sum=pl.Series(self.base.open_sums(mask).astype(np.int32)),
            score=pl.Series(self.mask_scores[mask]),
            **shares,
        )

    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """Each move label as the list of tiles it shuts (null for a pass)."""
        return self.base.describe_moves(label)

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of a position as the user gives it (:meth:`NPlayerRules.parse_state`)."""
        return self.r.parse_state(text, **extra)
