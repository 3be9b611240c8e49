"""Answers from the built tables: a state's value, and the best move for a roll."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.errors import UsageError
from pipeline.games.registry import Variant
from pipeline.store import tables


@dataclass(frozen=True)
class Expectation:
    """The value of one state."""

    variant: str
    state_id: int
    tiles: str
    value: float
    objective: str
    dice: int | None


@dataclass(frozen=True)
class MoveAdvice:
    """The best move for a roll, and what every legal move is worth."""

    variant: str
    state_id: int
    tiles: str
    roll: int
    objective: str
    value: float
    """Value after the best move (or the final value when stuck)."""
    best_move: list[int] | None
    """None when no move is legal: the game ends."""
    moves: pl.DataFrame
    """Every legal move: move, next_tiles, value, regret; best first."""
    passes_turn: bool = False
    """True when no move is legal and play goes on with another player (two-player games)."""


def _state_row(data_dir: Path, variant: Variant, text: str, extra: dict[str, Any]) -> dict:
    game = variant.make()
    state_id = game.parse_state(text, **extra)
    states = tables.read_table(data_dir, "states", variant.name)
    row = states.filter(pl.col("state_id") == state_id)
    if row.height == 0:
        raise UsageError(f"state {text!r} is not a state of variant {variant.name}")
    found = row.row(0, named=True)
    if found["value"] is None:
        raise UsageError(
            f"variant {variant.name} is enumerated but not solved: run "
            f"`stb-pipeline build --variant {variant.name}`"
        )
    return found


def expect(data_dir: Path, variant: Variant, tiles: str, **extra: Any) -> Expectation:
    """The value of the state written ``tiles`` (plus game-specific parts such as p1_score)."""
    row = _state_row(data_dir, variant, tiles, extra)
    return Expectation(
        variant.name, row["state_id"], row["tiles"], row["value"], row["objective"], row.get("dice")
    )


def best_move(data_dir: Path, variant: Variant, tiles: str, roll: int, **extra: Any) -> MoveAdvice:
    """The best move in state ``tiles`` after ``roll``, with the value and regret of every move."""
    row = _state_row(data_dir, variant, tiles, extra)
    if row["terminal"]:
        raise UsageError(f"state {tiles!r} of {variant.name} is terminal: there is nothing to roll")
    policy = tables.read_table(data_dir, "policy", variant.name).filter(
        pl.col("state_id") == row["state_id"]
    )
    # a roll past 32 bits matches no row, and polars cannot even compare it with one
    hit = policy.filter(pl.col("roll") == roll) if abs(roll) < 2**31 else policy.head(0)
    if hit.height == 0:
        rolls = sorted(policy["roll"].to_list())
        raise UsageError(
            f"roll {roll} is impossible in state {tiles!r} of {variant.name} "
            f"(possible rolls: {rolls[0]}..{rolls[-1]})"
        )
    best = hit.row(0, named=True)
    moves = (
        tables.read_table(data_dir, "moves", variant.name)
        .filter((pl.col("state_id") == row["state_id"]) & (pl.col("roll") == roll))
        .sort(["regret", "is_best"], descending=[False, True])
        .select("move", "next_tiles", "value", "regret", "is_best")
    )
    return MoveAdvice(
        variant.name,
        row["state_id"],
        row["tiles"],
        roll,
        row["objective"],
        best["value"],
        best["best_move"],
        moves,
        passes_turn=best["best_move"] is None and best["next_state_id"] is not None,
    )
