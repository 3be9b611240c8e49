"""A fixed set of Knucklebones decisions and what each heuristic player picks there: the rows
of the ``decisions`` table, which the exact tables price in SQL.

Two kinds of decision, each a (position, die) with its legal columns:

- ``opening``: the first two plies, every die: the empty board (ply 0), and every position after
  the first player's die (ply 1, the reply). Only the exact values say which column is best
  there (`queries/knucklebones_openings.sql`).
- ``sample``: every decision met in ``games`` games between two random players, played with
  ``seed`` (the same positions every run): realistic positions, on which
  `queries/knucklebones_perfect_loss.sql` prices what each player gives away against perfect play.

At each decision every player of :data:`PLAYERS` picks its column; ties are broken by that
player's own generator (``seed`` and its name), consumed at every decision in order, so a
player's picks do not depend on the others. The picks need no solve: the table is written beside
the full game's values, and :func:`pipeline.apps.knucklebones.loss.losses` (`knucklebones loss`)
uses the same decisions and picks, so the SQL and the command agree.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.engine import Play, Player

#: Random-vs-random games of the sample, and their seed (recorded in every row).
GAMES = 100
SEED = 1
#: The players whose picks the table records: greedy play, the Rust solver's depth-4 search and
#: ours at depth 2 (each a ``pick_*`` column: the name with '-' as '_').
PLAYERS = ("greedy", "seed-d4", "ours-d2")


@dataclass(frozen=True)
class Decision:
    """One decision: the position (facing pairs, the mover's view, real column order), its die,
    its ply in its game, and its kind (``opening`` or ``sample``)."""

    pairs: np.ndarray
    die: int
    ply: int
    kind: str


def sample_decisions(game: Knucklebones, games: int = GAMES, seed: int = SEED) -> list[Decision]:
    """Every decision in ``games`` random-vs-random games played with ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        pairs = np.zeros(game.r.columns, dtype=np.int64)
        ply = 0
        while not game.finished(pairs):
            face = int(rng.integers(1, game.r.faces + 1))
            out.append(Decision(pairs.copy(), face, ply, "sample"))
            col = int(rng.choice(game.legal_columns(pairs)))
            pairs = game.play(pairs, col, face)
            ply += 1
    return out


def opening_decisions(game: Knucklebones) -> list[Decision]:
    """Every die on the empty board (ply 0: every column is the same position), then every die
    of the reply to each first die (ply 1; the first die in the first column, which is any
    column up to symmetry)."""
    f = game.r.faces
    empty = np.zeros(game.r.columns, dtype=np.int64)
    out = [Decision(empty, d, 0, "opening") for d in range(1, f + 1)]
    for first in range(1, f + 1):
        seen = game.play(empty, 0, first)  # the replier's view
        out += [Decision(seen, d, 1, "opening") for d in range(1, f + 1)]
    return out


def picks(
    decisions: list[Decision], players: Mapping[str, Play], seed: int
) -> dict[str, np.ndarray]:
    """Each player's column (0-based) at every decision, in order."""
    # each player's own tie-break generator: the same picks whoever else plays
    rngs = {name: np.random.default_rng([seed, zlib.crc32(name.encode())]) for name in players}
    return {
        name: np.array([p(d.pairs, d.die, rngs[name]) for d in decisions], dtype=np.int64)
        for name, p in players.items()
    }


def pick_column(name: str) -> str:
    """The table column of a player's picks: ``pick_`` and its name with '-' as '_'."""
    return "pick_" + name.replace("-", "_")


def decision_rows(game: Knucklebones) -> dict[str, np.ndarray | list[str]]:
    """The ``decisions`` table's rows (but ``variant``): one per legal column of every opening
    and sampled decision, with the position's id and text, the successor's id (seen by the
    opponent) and whether each player of :data:`PLAYERS` picks that column."""
    players = {name: Player(game, name) for name in PLAYERS}
    kinds = (opening_decisions(game), sample_decisions(game))
    chosen = [picks(found, players, SEED) for found in kinds]
    names = ["kind", "decision", "ply", "state_id", "board", "roll", "column_number"]
    names += ["next_state_id", *(pick_column(name) for name in PLAYERS)]
    rows: dict[str, list] = {k: [] for k in names}
    n = 0
    for found, picked in zip(kinds, chosen, strict=True):
        for i, d in enumerate(found):
            state = game.state_of(d.pairs)
            board = game.board_text(d.pairs)
            for col, after in game.successors(d.pairs, d.die):
                row = [d.kind, n, d.ply, state, board, d.die, col + 1, game.state_of(after)]
                row += [bool(picked[name][i] == col) for name in PLAYERS]
                for k, value in zip(names, row, strict=True):
                    rows[k].append(value)
            n += 1
    out: dict[str, np.ndarray | list[str]] = {
        k: (v if k in ("kind", "board") else np.asarray(v)) for k, v in rows.items()
    }
    size = len(rows["kind"])
    out["games"] = np.full(size, GAMES, dtype=np.int64)
    out["seed"] = np.full(size, SEED, dtype=np.int64)
    return out
