"""Pig (Neller and Presser, "Optimal Play of the Dice Game Pig", The UMAP Journal 25(1), 2004).

Two players race to ``goal`` points. The player to move rolls one die: a 1 ends the turn with
nothing banked; any other face adds to the turn total, after which the player holds (banks the
turn total, and the turn passes) or rolls again. A bank that reaches the goal wins.

States, always seen by the player to move: ``i/j/k`` (my score, the opponent's, my turn total,
before a roll; ``i + k < goal``), ``i/j/-`` (I banked ``i``: the opponent is to play) and
``won`` (I reached the goal). A move is the choice after a roll of 2 or more: hold (label 0,
written ``[0]``) or roll again (label 1, ``[1]``); a 1 leaves no move (the turn passes). Ties go
to rolling again (the larger label). Values are P(win) of the player to move; a passed turn is
worth ``1 - V`` of the opponent's state, so play can come back to a state: value iteration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.base import Game, LegalMoves, Stuck
from pipeline.graph import Graph

SIDES = 6
HOLD, ROLL = 0, 1


class Pig(Game):
    """Pig to ``goal`` with one six-sided die."""

    objective = "wins"
    cyclic = True

    def __init__(self, goal: int) -> None:
        if not 2 <= goal <= 200:
            raise UsageError(f"a goal of 2 to 200 points, not {goal}")
        self.goal = goal
        self.banked_base = goal**3  # ids of i/j/-: banked_base + i * goal + j
        self.won = goal**3 + goal**2

    def rules(self) -> dict[str, Any]:
        return {"game": "pig", "goal": self.goal, "sides": SIDES, "objective": "wins"}

    # -- states ------------------------------------------------------------------------------

    def turn_id(self, i: int, j: int, k: int) -> int:
        return (i * self.goal + j) * self.goal + k

    def banked_id(self, i: int, j: int) -> int:
        return self.banked_base + i * self.goal + j

    def split(self, state_id: int) -> tuple[int, int, int | None]:
        """(my score, the opponent's, the turn total; None when banked)."""
        if state_id >= self.banked_base:
            rest = state_id - self.banked_base
            return rest // self.goal, rest % self.goal, None
        return state_id // self.goal**2, state_id // self.goal % self.goal, state_id % self.goal

    def all_ids(self) -> np.ndarray:
        g = self.goal
        turns = [self.turn_id(i, j, k) for i in range(g) for j in range(g) for k in range(g - i)]
        banked = [self.banked_id(i, j) for i in range(g) for j in range(g)]
        return np.array([*turns, *banked, self.won], dtype=np.int64)

    def start_state(self) -> int:
        return self.turn_id(0, 0, 0)

    def state_text(self, state_id: int) -> str:
        if state_id == self.won:
            return "won"
        i, j, k = self.split(state_id)
        return f"{i}/{j}/{'-' if k is None else k}"

    def parse_state(self, text: str, **extra: Any) -> int:
        """``i/j/k``, ``i/j`` (turn total 0), ``i/j/-`` (banked) or ``won``."""
        if text.strip() == "won":
            return self.won
        parts = text.strip().split("/")
        try:
            i, j = int(parts[0]), int(parts[1])
            k = None if parts[2:] == ["-"] else int(parts[2]) if len(parts) == 3 else 0
        except (ValueError, IndexError):
            raise UsageError(
                f"a Pig position is MINE/THEIRS/TURN, e.g. 12/7/3, not {text!r}"
            ) from None
        if len(parts) > 3 or not (0 <= i < self.goal and 0 <= j < self.goal):
            raise UsageError(f"scores are 0 to {self.goal - 1} before the goal, not {text!r}")
        if k is None:
            return self.banked_id(i, j)
        if not 0 <= k < self.goal - i:
            raise UsageError(f"a turn total of {k} at {i} points would have reached {self.goal}")
        return self.turn_id(i, j, k)

    # -- rules -------------------------------------------------------------------------------

    def roll_chances(self, state_id: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        """One die before a turn's roll; a banked turn passes (roll 0, no die)."""
        if state_id == self.won:
            return []
        if self.split(state_id)[2] is None:
            return [(0, [(0, 1, 1)])]
        return [(1, [(face, 1, SIDES) for face in range(1, SIDES + 1)])]

    def _moves(self, state_id: int, face: int) -> list[tuple[int, int]]:
        """(label, next state) after ``face``, roll again first (the larger label)."""
        i, j, k = self.split(state_id)
        if k is None or face < 2:
            return []
        total = k + face
        if i + total >= self.goal:
            return [(HOLD, self.won)]
        return [(ROLL, self.turn_id(i, j, total)), (HOLD, self.banked_id(i + total, j))]

    def legal_moves(self, state_id: int, rolls: Sequence[int]) -> LegalMoves:
        found = [(r, lab, nxt) for r in rolls for lab, nxt in self._moves(state_id, int(r))]
        cols = np.array(found, dtype=np.int64).reshape(-1, 3)
        return LegalMoves(cols[:, 0], cols[:, 1], cols[:, 2])

    def stuck(self, state_id: int) -> Stuck:
        """A 1, or a bank: the turn passes, worth 1 - the opponent's value."""
        i, j, _ = self.split(state_id)
        return Stuck("pass", self.turn_id(j, i, 0), None, "value", 1.0, -1.0)

    def move_tiles(self, label: int) -> list[int]:
        return [label]

    # -- the graph ---------------------------------------------------------------------------

    def graph(self) -> Graph:
        ids = self.all_ids()
        index = {int(s): n for n, s in enumerate(ids.tolist())}
        ch: list[tuple[int, int, int, int, int]] = []  # state, choice, count, denom, node
        nodes: list[tuple[int, int]] = []
        moves: list[tuple[int, int, float, float, int]] = []  # node, dst, scale, offset, label
        for n, s in enumerate(ids.tolist()):
            for choice, rolls in self.roll_chances(s):
                for face, ways, denom in rolls:
                    node = len(nodes)
                    nodes.append((n, face))
                    ch.append((n, choice, ways, denom, node))
                    found = self._moves(s, face)
                    for label, nxt in found:
                        moves.append((node, index[nxt], 1.0, 0.0, label))
                    if not found:  # a 1, or a bank: the opponent's turn, worth 1 - theirs
                        passed = self.turn_id(*reversed(self.split(s)[:2]), 0)
                        moves.append((node, index[passed], -1.0, 1.0, -1))
        c, nd, mv = np.array(ch), np.array(nodes), np.array(moves)
        terminal = np.full(ids.shape[0], np.nan)
        terminal[index[self.won]] = 1.0
        # the states nearest the goal first: a sweep then meets most successors valued
        rank = [3 * self.goal - sum(x or 0 for x in self.split(int(s))) for s in ids[:-1]]
        return Graph(
            state_id=ids,
            rank=np.array([*rank, 0], dtype=np.int64),
            terminal=terminal,
            ch_state=c[:, 0].astype(np.int64),
            ch_choice=c[:, 1].astype(np.int64),
            ch_count=c[:, 2].astype(np.int64),
            ch_denom=c[:, 3].astype(np.int64),
            ch_node=c[:, 4].astype(np.int64),
            node_state=nd[:, 0].astype(np.int64),
            node_roll=nd[:, 1].astype(np.int64),
            mv_node=mv[:, 0].astype(np.int64),
            mv_dst=mv[:, 1].astype(np.int64),
            mv_scale=mv[:, 2],
            mv_offset=mv[:, 3],
            mv_label=mv[:, 4].astype(np.int64),
            maximise=True,
            cyclic=True,
        )

    # -- the tables --------------------------------------------------------------------------

    def describe_states(self, state_id: np.ndarray) -> Any:
        import polars as pl

        texts = [self.state_text(int(s)) for s in state_id.tolist()]
        split = [self.split(int(s)) if s != self.won else (None, None, None) for s in state_id]
        return pl.DataFrame(
            {
                "tiles": texts,
                "mover_score": pl.Series([a for a, _, _ in split], dtype=pl.Int32),
                "opponent_score": pl.Series([b for _, b, _ in split], dtype=pl.Int32),
            }
        )

    def describe_moves(self, label: np.ndarray) -> Any:
        """Each label as a one-item list (``[0]`` hold, ``[1]`` roll), a pass as null: built by
        polars from the array (a Python list a row took a minute at goal 50)."""
        import polars as pl

        x = pl.col("label")
        frame = pl.DataFrame({"label": np.asarray(label, dtype=np.int8)})
        made = frame.select(pl.when(x >= 0).then(pl.concat_list(x)).alias("move"))
        return made.to_series().cast(pl.List(pl.Int8))
