"""What heuristic Knucklebones players lose against perfect play, priced by the exact tables.

The positions are a fixed sample (:mod:`pipeline.games.knucklebones.players.decisions`): the
decisions met in ``games`` games between two random players (seeded, so the sample is the same every
run), each a (position, die) with at least two columns whose exact values differ. At each one, every
player named picks its column; its *regret* is the best column's exact value minus the picked
column's, from the tables of both objectives (the win probability of win-maximising play, the
expected score difference of difference-maximising play): the one answer about the position
(:mod:`pipeline.answer.boards`), whose columns carry both. The same sample and picks are the full
game's ``decisions`` table, which `queries/knucklebones_perfect_loss.sql` prices in SQL with the
same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.answer.answers import for_dir
from pipeline.apps.knucklebones.known import built
from pipeline.apps.knucklebones.match import make_player
from pipeline.apps.knucklebones.rating import Decisions, regrets
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import decisions as sample

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
    answers = for_dir(data_dir)
    variant, twin = built(answers, game.r)
    if variant is None or twin is None:
        raise UsageError(
            f"no built wins and score tables of the {game.r.columns}x{game.r.rows} "
            f"d{game.r.faces} board in {data_dir}: build them first (the full game: `stb-pipeline "
            "build --variant knucklebones --variant knucklebones-score --device cuda`)"
        )
    decisions = sample.sample_decisions(game, games, seed)
    # the same picks as the decisions table's (sample.picks: each player's own tie-breaks)
    chosen = sample.picks(
        decisions, {name: make_player(game, name, answers) for name in players}, seed
    )
    board = answers.board_rules(variant)
    c = game.r.columns
    win, diff = np.full((len(decisions), c), np.nan), np.full((len(decisions), c), np.nan)
    for i, d in enumerate(decisions):
        found = answers.board(variant, board.position_of(d.pairs), d.die, built=True)
        for col in found.columns:  # both objectives are built (checked above)
            win[i, col.column - 1], diff[i, col.column - 1] = col.win, col.diff
    # the decisions that matter: some column worse than another in win chance
    priced = np.nanmax(win, axis=1) - np.nanmin(win, axis=1) > MATTERS
    asked = Decisions(np.array([d.pairs for d in decisions]), np.array([d.die for d in decisions]),
                      win, diff, np.zeros(len(decisions), dtype=bool)).subset(priced)  # fmt: skip
    out = []
    for name in players:
        lost, points = regrets(asked, chosen[name][priced])
        n = len(asked)
        out.append(PlayerLoss(
            name, n, float((lost > MATTERS).mean()) if n else 0.0, float(lost.mean()) if n else 0.0,
            float(lost.max()) if n else 0.0, float(points.mean()) if n else 0.0,
        ))  # fmt: skip
    return out
