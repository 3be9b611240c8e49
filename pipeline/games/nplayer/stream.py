"""The N-player game's graph-free build: its tables straight from the compiled solve.

Each block (a seat facing a best score held by some players) is solved by
:func:`pipeline.games.nplayer.kernels.solve_block`, which also records each roll's chosen move
and each mask's dice; its rows of `states`, `policy` and `moves` are made from those arrays with
numpy and handed to the streaming writer before the next block is solved, so memory holds the
one-player graph, one block and the start payoffs of the seat after, never a table or a graph
of the whole game. Blocks come last seat first (the solve's order).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from pipeline.games.base import Streamed
from pipeline.games.nplayer.rules import BEATEN, FIRST_SEAT, HOLDER, MAX_PLAYERS
from pipeline.graph import PASS

#: The game (a pipeline.games.nplayer.game.NPlayer, which imports this module to build).
NPlayer = Any

#: The tables this build writes (edges are left out: a graph build, or `--exact`, has them).
TABLES = ("states", "policy", "moves")


def streamed(game: NPlayer, tables: Sequence[str]) -> Streamed:
    """The :class:`Streamed` build of ``game``: states, policy and moves (always: the lookups
    and the position query read them)."""
    box = _Box(game)
    tally = {"nodes": 0, "moves": 0, "start": float("nan")}

    def batches() -> Iterator[dict[str, dict[str, Any]]]:
        from pipeline import progress

        record = game.new_record()
        blocks = game.blocks()
        with progress.task("blocks", total=len(blocks), unit="blocks") as job:
            for number, (seat, best, count), vectors in game._solve_blocks(False, record=record):
                batch = box.rows(_Block(number, seat, best, count, vectors, record))
                tally["nodes"] += batch["policy"]["roll"].shape[0]
                tally["moves"] += batch["moves"]["roll"].shape[0]
                if seat == 1:
                    tally["start"] = float(vectors[game.full, FIRST_SEAT])
                job.update(note=f"player {seat}")
                yield batch
                job.advance()

    return Streamed(
        tables=TABLES,
        batches=batches(),
        constants={
            "states": {
                "objective": game.objective,
                "maximise": True,
                "residual": 0.0,
                "players": game.n,
            }
        },
        options={t: {} for t in TABLES},
        n_states=len(game.blocks()) * game.n_masks,
        start_value=lambda: tally["start"],
        counts=lambda: (int(tally["nodes"]), int(tally["moves"])),
        what="solving player by player",
        note="solved block by block without a graph (no edges table)",
        extra=lambda: {"summary": game.summary(None, None)},
    )


class _Block(NamedTuple):
    """One solved block: its number, the seat to move, the best score before it and how many
    share it, every mask's payoff vector, and the solve's record of picks and dice."""

    number: int
    seat: int
    best: int
    n_best: int
    vectors: np.ndarray
    record: dict[str, np.ndarray]


class _Box:
    """What every block shares: each mask's tiles as text and list, sums, scores, and the
    one-player graph's nodes and legal moves."""

    def __init__(self, game: NPlayer) -> None:
        self.game = game
        b = game.one_player_graph
        self.b = b
        masks = np.arange(game.n_masks, dtype=np.int64)
        cols = game.base._tile_columns(masks)
        self.text = cols["tiles"].to_arrow()
        self.lists = cols["open_tiles"].to_arrow().cast(pa.list_(pa.int8()))
        self.n_open = np.bitwise_count(masks.astype(np.uint64)).astype(np.int16)
        self.open_sum = game.base.open_sums(masks).astype(np.int32)
        self.score = game.mask_scores
        self.legal = np.flatnonzero(b.mv_label >= 0)
        self.n_moves = np.bincount(b.mv_node[self.legal], minlength=b.node_state.shape[0]).astype(
            np.int16
        )

    def rows(self, blk: _Block) -> dict[str, dict[str, Any]]:
        """The states, policy and moves rows of one solved block."""
        return {"states": self.states(blk), "policy": self.policy(blk), "moves": self.moves(blk)}

    def states(self, blk: _Block) -> dict[str, Any]:
        number, seat, best, count, vectors, record = blk
        game, f = self.game, self.game.n_masks
        alive = game.alive(seat, best)
        me = FIRST_SEAT + seat - 1
        two = game.n == 2 and game.r.box.scoring == "sum"
        later = seat > 1
        cols: dict[str, Any] = {
            "state_id": number * f + np.arange(f, dtype=np.int64),
            "tiles": self.text,
            "open_tiles": self.lists,
            "n_open": self.n_open,
            "open_sum": self.open_sum,
            "score": self.score,
            "terminal": ~alive,
            "rank": (self.n_open + (game.n - seat) * (game.r.box.tiles + 1)).astype(np.int32),
            "value": vectors[:, me].copy(),
            "dice": np.ma.array(record["state_choice"].astype(np.int16), mask=~alive),
            "choice_options": np.where(alive, record["state_choices"], 0).astype(np.int16),
            "player": np.full(f, seat, dtype=np.int8),
            # p1_score: the course's column (two players with sum scoring)
            "p1_score": _null_unless(np.full(f, best if two else 0, dtype=np.int16), two and later),
            "best_score": _null_unless(np.full(f, best, dtype=np.int64), later),
            "best_count": _null_unless(np.full(f, count, dtype=np.int8), later),
            "share_holder": _null_unless(vectors[:, HOLDER].copy(), later),
            "share_beaten": _null_unless(vectors[:, BEATEN].copy(), seat - 1 > count),
        }
        for k in range(1, MAX_PLAYERS + 1):
            if seat <= k <= game.n:
                cols[f"share_{k}"] = vectors[:, FIRST_SEAT + k - 1].copy()
        return cols

    def policy(self, blk: _Block) -> dict[str, Any]:
        number, seat, best, count, _, record = blk
        game, b, f = self.game, self.b, self.game.n_masks
        alive = game.alive(seat, best)
        nodes = np.flatnonzero(alive[b.node_state])
        masks = b.node_state[nodes].astype(np.int64)
        pick = record["node_pick"][nodes]
        label = b.mv_label[pick].astype(np.int64)
        stuck = label == PASS
        dst = np.where(stuck, 0, b.mv_dst[pick]).astype(np.int64)
        last = seat == game.n
        nxt_start = game.next_blocks(seat, best, count, self.score[masks]) * f + game.full
        nxt = np.where(stuck, nxt_start, number * f + dst)
        kind = np.where(~stuck, "move", "end" if last else "pass")
        return {
            "state_id": number * f + masks,
            "tiles": self.text.take(pa.array(masks)),
            "roll": b.node_roll[nodes].astype(np.int16),
            "stuck": stuck,
            "best_move": self.lists.take(pa.array(np.where(stuck, 0, label), mask=stuck)),
            "next_state_id": np.ma.array(nxt, mask=stuck & last),
            "next_tiles": self.text.take(
                pa.array(np.where(stuck, game.full, dst), mask=stuck & last)
            ),
            "value": record["node_value"][nodes].copy(),
            "n_optimal": np.where(stuck, 0, record["node_optimal"][nodes]).astype(np.int16),
            "n_moves": self.n_moves[nodes],
            "kind": pa.array(kind.tolist(), type=pa.string()),
        }

    def moves(self, blk: _Block) -> dict[str, Any]:
        number, seat, best, _, vectors, record = blk
        game, b, f = self.game, self.b, self.game.n_masks
        alive = game.alive(seat, best)
        legal = self.legal[alive[b.node_state[b.mv_node[self.legal]]]]
        node = b.mv_node[legal]
        masks = b.node_state[node].astype(np.int64)
        dst = b.mv_dst[legal].astype(np.int64)
        value = vectors[dst, FIRST_SEAT + seat - 1]
        best_value = record["node_value"][node]
        return {
            "state_id": number * f + masks,
            "tiles": self.text.take(pa.array(masks)),
            "roll": b.node_roll[node].astype(np.int16),
            "move": self.lists.take(pa.array(b.mv_label[legal].astype(np.int64))),
            "next_state_id": number * f + dst,
            "next_tiles": self.text.take(pa.array(dst)),
            "value": value,
            "regret": np.maximum(best_value - value, 0.0),
            "is_best": record["node_pick"][node] == legal,
        }


def _null_unless(values: np.ndarray, shown: bool) -> Any:
    """``values``, or a column of nulls (a masked array) where they are not ``shown``."""
    return values if shown else np.ma.array(values, mask=np.ones(values.shape[0], dtype=bool))
