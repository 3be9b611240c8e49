"""Knucklebones players and simulated matches: random, greedy, the Rust solver's search and ours.

A board in play keeps its real column order (the canonical form is only for the search): it is
an array of facing-pair indices seen from the player to move, column ``i`` of the mover facing
column ``i`` of the opponent. After each move the array is swapped to the other player's view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from pipeline.apps.knucklebones.known import built
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.engine import Play, Player, policy
from pipeline.solve.simulate import wilson
from pipeline.store import tables

if TYPE_CHECKING:
    from pipeline.answer.answers import Answers


def make_player(game: Knucklebones, name: str, answers: Answers | None = None) -> Play:
    """A player by name: random, greedy, seed-dN (the Rust solver's heuristic), ours-dN, or perfect
    (the one answer's pick, :mod:`pipeline.answer.boards`, from the exact win tables in
    ``answers``' data directory: the best win probability, ties to the tables' policy)."""
    if name != "perfect":
        check_player(name)  # a name and depth a user can be told about, in their words
        return Player(game, name)
    variant, _ = built(answers, game.r)
    if variant is None or answers is None:
        raise UsageError(
            "player 'perfect' needs the full game's exact tables: `stb-pipeline build "
            "--variant knucklebones --variant knucklebones-score --device cuda` (a GPU)"
        )
    rules = answers.board_rules(variant)

    def play(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        best = answers.board(variant, rules.position_of(pairs), face, built=True).best
        assert best is not None  # the game goes on: some column is legal
        return best.column - 1

    return play


def check_player(name: str) -> int:
    """The search depth of a player name (0 for random, greedy and perfect): the deeper of its
    depths; UsageError when the name is not a player (:func:`engine.policy`'s words)."""
    if name == "perfect":
        return 0
    found = policy(name)
    return max(found.depth, found.deeper)


def player_names(text: str, option: str) -> list[str]:
    """The players ``text`` names (comma-separated), each checked (:func:`check_player`)."""
    from pipeline.games.registry import split_names

    found = split_names([text], option)
    for name in found:
        check_player(name)
    return found


@dataclass
class GameRecord:
    """How one simulated game ended, from the first-named player's view."""

    diff: int
    """Final score of player A minus player B."""
    decisions_ms: list[float] = field(default_factory=list)
    """Player A's decision times."""


def play_game(
    game: Knucklebones, a: Play, b: Play, a_first: bool, rng: np.random.Generator
) -> GameRecord:
    """Play one game of A against B; the die and the players' tie-breaks use ``rng``."""
    pairs = np.zeros(game.r.columns, dtype=np.int64)
    a_to_move = a_first
    record = GameRecord(0)
    while not game.finished(pairs):
        face = int(rng.integers(1, game.r.faces + 1))
        if a_to_move:
            t0 = time.perf_counter()
            col = a(pairs, face, rng)
            record.decisions_ms.append(1000 * (time.perf_counter() - t0))
        else:
            col = b(pairs, face, rng)
        pairs = game.play(pairs, col, face)
        a_to_move = not a_to_move
    mine, theirs = game.scores(pairs[None, :])
    diff = int(mine[0] - theirs[0])
    record.diff = diff if a_to_move else -diff
    return record


def match(
    game: Knucklebones,
    ours: str,
    opponent: str,
    games: int,
    seed: int,
    tick: Callable[[], None] | None = None,
    answers: Answers | None = None,
) -> dict:
    """Play ``games`` games of ``ours`` against ``opponent``, seats alternated; one result row
    (``answers``: a data directory's, whose exact tables the ``perfect`` player reads)."""
    rng = np.random.default_rng(seed)
    a, b = make_player(game, ours, answers), make_player(game, opponent, answers)
    diffs: list[int] = []
    times: list[float] = []
    t0 = time.perf_counter()
    for i in range(games):
        rec = play_game(game, a, b, a_first=i % 2 == 0, rng=rng)
        diffs.append(rec.diff)
        times.extend(rec.decisions_ms)
        if tick is not None:
            tick()
    seconds = time.perf_counter() - t0
    d = np.array(diffs)
    wins, draws, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    row = {
        "strategy": ours,
        "opponent": opponent,
        "depth": int(ours.split("-d")[1]) if "-d" in ours else None,
        "method": "simulation",
        "games": games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "win_rate": wins / games,
        "draw_rate": draws / games,
        "loss_rate": losses / games,
        "expected_score": float(d.mean()),
        "median_decision_ms": float(np.median(times)),
        "seconds": seconds,
        "games_per_second": games / seconds if seconds > 0 else None,
        "seed": seed,
    }
    for name, k in (("", wins), ("draw_", draws), ("loss_", losses)):
        row[f"{name}ci_low"], row[f"{name}ci_high"] = wilson(k, games)
    return row


def benchmark_frame(
    game: Knucklebones,
    depths: list[int],
    opponents: list[str],
    games: int,
    seed: int,
    tick: Callable[[], None] | None = None,
    answers: Answers | None = None,
) -> pl.DataFrame:
    """One row per (our depth, opponent): the benchmark table rows (without ``variant``);
    ``answers``: a data directory's, whose full game tables the ``perfect`` opponent reads."""
    rows = [
        match(game, f"ours-d{d}", opp, games, seed + 1000 * d + i, tick, answers)
        for d in depths
        for i, opp in enumerate(opponents)
    ]
    return pl.DataFrame(rows).with_columns(
        pl.col("depth").cast(pl.Int16), pl.col("games", "wins", "draws", "losses").cast(pl.Int64)
    )


BENCH_VARIANT = "knucklebones"


def write_benchmark_rows(data_dir: Path, frame: pl.DataFrame, game: Knucklebones) -> Path:
    """Store match rows as variant ``knucklebones`` of benchmarks.parquet.

    Rows of earlier runs for other (strategy, opponent) pairs are kept, so runs of different
    depths or opponents add up; the same pair is replaced.
    """
    with tables.data_lock(data_dir):
        old = tables.read_arrow(data_dir, "benchmarks")
        keep = pl.DataFrame()
        if old is not None and "opponent" in old.column_names:
            prev = pl.from_arrow(old)
            assert isinstance(prev, pl.DataFrame)
            keys = frame.select("strategy", "opponent")
            keep = (
                prev.filter(pl.col("variant") == BENCH_VARIANT)
                .join(keys, on=["strategy", "opponent"], how="anti")
                .drop("variant")
            )
        rows = pl.concat([keep, frame], how="diagonal_relaxed") if keep.height else frame
        rows = rows.sort("depth", "opponent")
        return tables.replace_rows(
            data_dir, "benchmarks", {BENCH_VARIANT: rows}, {BENCH_VARIANT: game.rules()}
        )
