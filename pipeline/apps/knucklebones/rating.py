"""Knucklebones players measured against exact values, choice by choice.

The positions are a held-out labelled set (:mod:`pipeline.games.knucklebones.players.labels`):
positions met in games between the project's players, labelled with the exact value of every choice
in both objectives, and *held out*: their state ids fall in the tenth that no evaluator is trained
on (:func:`pipeline.games.knucklebones.players.labels.held_out`). A decision is a position and a die
with at least two distinct moves. At each, every player picks a column; its *regret* is the best
choice's exact win chance minus the picked one's, and the pick is *optimal* when that is within the
tie tolerance (1e-12, relative). The middle game is the decisions with at most two thirds of both
boards' slots filled (12 dice of the full game's 18). Each player's time is the mean CPU time of
its picks (the picking thread's: one core, and on a busy machine the time the pick itself took,
not the time it waited for a core), after one untimed pick (the first compiles the search).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.artefacts import ExactDecisions
from pipeline.games.knucklebones.players.engine import Play
from pipeline.games.knucklebones.players.labels import Labelled
from pipeline.solve.tolerance import ties


@dataclass(frozen=True)
class Decisions:
    """The decisions of a labelled set: (position, die) with two or more distinct moves."""

    pairs: np.ndarray
    """[n, columns] sorted facing pairs of each decision's position."""
    die: np.ndarray
    win: np.ndarray
    """[n, columns] each column's exact win-chance value (NaN: no move)."""
    diff: np.ndarray
    """[n, columns] each column's exact score-difference value (NaN: no move)."""
    middle: np.ndarray
    """Whether the decision is in the middle game."""
    tolerance: float | None = None
    """How far below the best column's win chance a pick is still optimal (None: the tie
    rule's, 1e-12 relative; a decisions file's values are proven to within 1e-11, and its
    README counts a pick within 1e-9 optimal)."""

    def __len__(self) -> int:
        return int(self.die.shape[0])

    def subset(self, keep: np.ndarray) -> Decisions:
        """The decisions where ``keep`` (a boolean mask or indices)."""
        return Decisions(self.pairs[keep], self.die[keep], self.win[keep], self.diff[keep],
                         self.middle[keep], self.tolerance)  # fmt: skip


@dataclass(frozen=True)
class Rating:
    """One player's measures over the decisions."""

    player: str
    decisions: int
    optimal: float
    """Share of decisions where the pick is exactly optimal in win chance."""
    middle_decisions: int
    optimal_middle: float
    mean_regret: float
    """Win chance lost per decision, decisions weighted alike."""
    max_regret: float
    mean_points_lost: float
    """Expected score difference lost against the score objective's best choice."""
    ms_per_move: float

    def row(self) -> dict[str, object]:
        return asdict(self)


def decisions(game: Knucklebones, labelled: Labelled, limit: int, seed: int) -> Decisions:
    """The labelled set's decisions, at most ``limit`` of them drawn with ``seed``."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    f, c = labelled.faces, labelled.columns
    nxt = labelled.next_id.reshape(-1, f, c)
    # distinct moves: equal successors are one move (equal pairs are already one column)
    srt = np.sort(nxt, axis=2)
    fresh = np.ones(srt.shape, dtype=bool)
    fresh[..., 1:] = srt[..., 1:] != srt[..., :-1]
    moves = ((srt >= 0) & fresh).sum(axis=2)
    where = np.argwhere(moves > 1)
    if limit and len(where) > limit:
        rng = np.random.default_rng(seed)
        where = where[np.sort(rng.choice(len(where), limit, replace=False))]
    pos, die = where[:, 0], where[:, 1]
    win = labelled.choices["win"].reshape(-1, f, c)[pos, die]
    diff = labelled.choices["diff"].reshape(-1, f, c)[pos, die]
    return Decisions(
        pairs_of(game.r, labelled.state_id[pos]), die + 1, win, diff,
        labelled.dice[pos] <= middle_dice(game),
    )  # fmt: skip


#: A pick within this much of the best column's win chance is optimal on a decisions file
#: (its README's rule).
FILE_TOLERANCE = 1e-9


def from_file(game: Knucklebones, found: ExactDecisions) -> Decisions:
    """The decisions of a decisions file (:func:`~pipeline.games.knucklebones.players.
    artefacts.read_decisions`), every one (a die with one open column counts, as the file's
    own figures count it), in the user's column order."""
    return Decisions(
        found.pairs,
        found.die,
        found.win,
        found.diff,
        found.dice <= middle_dice(game),
        FILE_TOLERANCE,
    )


def middle_dice(game: Knucklebones) -> int:
    """The most dice on both boards of a middle-game decision: two thirds of the slots."""
    return (2 * 2 * game.r.slots) // 3


def rate(
    name: str,
    player: Play,
    found: Decisions,
    seed: int,
    tick: Callable[[], None] | None = None,
) -> Rating:
    """``player``'s measures over ``found`` (tie-breaks from ``seed``)."""
    rng = np.random.default_rng(seed)
    n = len(found)
    if n:  # one untimed pick first: a first call compiles the search (seconds on a cold cache)
        player(found.pairs[0], int(found.die[0]), np.random.default_rng(seed))
    picked = np.empty(n, dtype=np.int64)
    seconds = 0.0
    for i in range(n):
        pairs = found.pairs[i]
        t0 = time.thread_time()
        col = player(pairs, int(found.die[i]), rng)
        seconds += time.thread_time() - t0
        picked[i] = np.flatnonzero(pairs == pairs[col])[0]  # equal pairs: one move, the first
        if tick is not None:
            tick()
    regret, points = regrets(found, picked)
    best = np.nanmax(found.win, axis=1)
    # the pick's value ties the best's (the one rule), or is within the file's tolerance
    tol = found.tolerance
    optimal = ties(best - regret, best) if tol is None else regret <= tol
    mid = found.middle
    return Rating(
        name, n, float(optimal.mean()) if n else 0.0, int(mid.sum()),
        float(optimal[mid].mean()) if mid.any() else float("nan"),
        float(regret.mean()) if n else 0.0, float(regret.max()) if n else 0.0,
        float(points.mean()) if n else 0.0, 1000 * seconds / max(n, 1),
    )  # fmt: skip


def regrets(found: Decisions, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the column picked at each decision gives away against its best one: the win
    chance, and the points against the score objective's best (the one measure of a player
    against exact values: `rate`'s and `loss`'s)."""
    at = np.arange(len(found))
    return (
        np.nanmax(found.win, axis=1) - found.win[at, columns],
        np.nanmax(found.diff, axis=1) - found.diff[at, columns],
    )


def rate_all(players: Mapping[str, Play], found: Decisions, seed: int) -> list[Rating]:
    """Every player rated on ``found`` (:func:`rate`, each with the same tie-break ``seed``),
    with a progress bar over all their picks."""
    from pipeline import progress

    with progress.task("rating against exact play", total=len(players) * len(found)) as job:
        return [rate(name, player, found, seed, job.advance) for name, player in players.items()]


def beats(new: Rating, old: Rating) -> bool:
    """Whether ``new`` is better than ``old`` on every measure of win chance: share optimal
    overall and in the middle game, mean regret, and no worse at worst."""
    return (
        new.optimal > old.optimal and new.optimal_middle > old.optimal_middle
        and new.mean_regret < old.mean_regret and new.max_regret <= old.max_regret
    )  # fmt: skip


#: The ``method`` of a rating's rows in the ``benchmarks`` table.
METHOD = "exact choices"


def write_rows(
    data_dir: Path, variant: str, rules: dict[str, Any], ratings: list[Rating], record: dict
) -> Path:
    """Store the ratings as ``benchmarks`` rows of ``variant`` (method :data:`METHOD`; a
    player's earlier rating rows replaced, every other row kept), with the labelled set's
    ``seed`` and ``games`` from ``record``."""
    import polars as pl

    from pipeline.store import tables

    rows = [
        {
            "strategy": r.player, "method": METHOD, **{k: v for k, v in r.row().items()
                                                       if k != "player"},
            "games": int(record["games"]), "seed": int(record["seed"]),
        }
        for r in ratings
    ]  # fmt: skip
    frame = pl.DataFrame(rows).with_columns(
        pl.col("decisions", "middle_decisions", "games", "seed").cast(pl.Int64)
    )
    with tables.data_lock(data_dir):
        return tables.replace_rows(data_dir, "benchmarks", {variant: frame}, {variant: rules})
