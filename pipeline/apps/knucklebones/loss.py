"""What heuristic Knucklebones players lose against perfect play, priced by the exact tables.

The positions are a fixed sample: the decisions met in ``games`` games between two random players
(seeded, so the sample is the same every run), each a (position, die) with at least two columns
whose exact values differ. At each one, every player named picks its column; its *regret* is the
best column's exact value minus the picked column's, from the tables of both objectives (the win
probability of win-maximising play, the expected score difference of difference-maximising
play). A move's value is its successor's seen from the other side, so a decision costs one lookup
per column (:class:`pipeline.apps.knucklebones.known.TableLookup`): this works on the full game's
lean tables, which SQL cannot rank moves from (they hold no board texts).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.apps.knucklebones.known import open_lookup
from pipeline.apps.knucklebones.match import make_player
from pipeline.apps.knucklebones.position import table_column_values
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules


@dataclass(frozen=True)
class PlayerLoss:
    """One player's regret over the sampled decisions."""

    player: str
    decisions: int
    share_suboptimal: float
    """Share of the decisions where the column picked loses more than 1e-6 in win probability."""
    mean_win_regret: float
    """Win probability lost per decision, averaged over the decisions alike."""
    max_win_regret: float
    mean_score_regret: float
    """Points of expected score difference lost per decision (against the score table's best)."""


def sample_decisions(game: Knucklebones, games: int, seed: int) -> list[tuple[np.ndarray, int]]:
    """(pairs from the mover's view, die) of every decision in ``games`` random-vs-random games
    played with ``seed``: realistic positions, the same every run."""
    rng = np.random.default_rng(seed)
    t = game.t
    out = []
    for _ in range(games):
        pairs = np.zeros(game.r.columns, dtype=np.int64)
        while not game.terminal_mask(pairs[None, :])[0]:
            face = int(rng.integers(1, game.r.faces + 1))
            out.append((pairs.copy(), face))
            legal = np.flatnonzero(t.place[pairs, face - 1] >= 0)
            col = int(rng.choice(legal))
            pairs[col] = t.place[pairs[col], face - 1]
            pairs = t.swap[pairs]
    return out


def losses(
    data_dir: Path,
    players: list[str],
    games: int = 100,
    seed: int = 0,
    rules: KnuckleRules | None = None,
) -> list[PlayerLoss]:
    """Each player's regret against perfect play over the sampled decisions (see the module
    docstring); UsageError when the board's wins and score tables are not both built."""
    game = Knucklebones(rules or KnuckleRules())
    lookup = open_lookup(data_dir, game.r)
    if lookup is None:
        raise UsageError(
            f"no built wins and score tables of the {game.r.columns}x{game.r.rows} "
            f"d{game.r.faces} board in {data_dir}: build them first (the full game: `stb-pipeline "
            "build --variant knucklebones --variant knucklebones-score --device cuda`)"
        )
    made = {name: make_player(game, name, lookup) for name in players}
    # each player's tie-breaks from its own generator (seed and name): a player's regret does
    # not depend on which other players were asked
    rngs = {name: np.random.default_rng([seed, zlib.crc32(name.encode())]) for name in players}
    regrets: dict[str, list[tuple[float, float]]] = {name: [] for name in players}
    for pairs, face in sample_decisions(game, games, seed):
        values = table_column_values(game, lookup, pairs, face)
        wins = {cv.column - 1: cv.value.win for cv in values}
        diffs = {cv.column - 1: cv.value.diff for cv in values}
        if max(wins.values()) - min(wins.values()) <= 1e-6:
            continue  # every column is as good: no decision to price
        for name, player in made.items():
            col = player(pairs, face, rngs[name])
            regrets[name].append((max(wins.values()) - wins[col], max(diffs.values()) - diffs[col]))
    out = []
    for name in players:
        r = np.array(regrets[name]).reshape(-1, 2)
        n = r.shape[0]
        out.append(
            PlayerLoss(
                name,
                n,
                float((r[:, 0] > 1e-6).mean()) if n else 0.0,
                float(r[:, 0].mean()) if n else 0.0,
                float(r[:, 0].max()) if n else 0.0,
                float(r[:, 1].mean()) if n else 0.0,
            )
        )
    return out
