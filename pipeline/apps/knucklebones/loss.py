"""What heuristic Knucklebones players lose against perfect play, priced by the exact tables.

The positions are a fixed sample (:mod:`pipeline.games.knucklebones.sample`): the decisions met
in ``games`` games between two random players (seeded, so the sample is the same every run),
each a (position, die) with at least two columns whose exact values differ. At each one, every
player named picks its column; its *regret* is the best column's exact value minus the picked
column's, from the tables of both objectives (the win probability of win-maximising play, the
expected score difference of difference-maximising play). A move's value is its successor's seen
from the other side, so a decision costs one lookup per column
(:class:`pipeline.apps.knucklebones.known.TableLookup`). The same sample and picks are the full
game's ``decisions`` table, which `queries/knucklebones_perfect_loss.sql` prices in SQL with the
same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.apps.knucklebones.known import open_lookup
from pipeline.apps.knucklebones.match import make_player
from pipeline.apps.knucklebones.position import table_column_values
from pipeline.errors import UsageError
from pipeline.games.knucklebones import sample
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

#: A decision matters, and a pick is a mistake, past this much win probability (the tables are
#: float32: their values are good to about 1e-7).
MATTERS = 1e-6


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


def losses(
    data_dir: Path,
    players: list[str],
    games: int = sample.GAMES,
    seed: int = sample.SEED,
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
    decisions = sample.sample_decisions(game, games, seed)
    # the same picks as the decisions table's (sample.picks: each player's own tie-breaks)
    chosen = sample.picks(
        decisions, {name: make_player(game, name, lookup) for name in players}, seed
    )
    regrets: dict[str, list[tuple[float, float]]] = {name: [] for name in players}
    for i, d in enumerate(decisions):
        values = table_column_values(game, lookup, d.pairs, d.die)
        wins = {cv.column - 1: cv.value.win for cv in values}
        diffs = {cv.column - 1: cv.value.diff for cv in values}
        if max(wins.values()) - min(wins.values()) <= MATTERS:
            continue  # every column is as good: no decision to price
        for name in players:
            col = int(chosen[name][i])
            regrets[name].append((max(wins.values()) - wins[col], max(diffs.values()) - diffs[col]))
    out = []
    for name in players:
        r = np.array(regrets[name]).reshape(-1, 2)
        n = r.shape[0]
        out.append(
            PlayerLoss(
                name,
                n,
                float((r[:, 0] > MATTERS).mean()) if n else 0.0,
                float(r[:, 0].mean()) if n else 0.0,
                float(r[:, 0].max()) if n else 0.0,
                float(r[:, 1].mean()) if n else 0.0,
            )
        )
    return out
