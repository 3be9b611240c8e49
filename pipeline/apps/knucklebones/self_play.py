"""A Knucklebones player learned from the rules alone (`knucklebones self-play`), measured
against exact play where the truth is known.

The evaluator comes from fitted value iteration
(:mod:`pipeline.games.knucklebones.players.fitted`): no exact value is read while it learns.
Then its player (``net-dN``, ``net-dN+M``) and the baseline search are rated on held-out exact
decisions (:func:`held_decisions`): the full game's packaged decisions file (or another one
given), a small board's packaged held-out labelled set (or positions labelled here by an exact
solve), beside the board's packaged model fitted to exact values where there is one. The
record says whether the new player beat the baseline on every measure of win chance
(:func:`pipeline.apps.knucklebones.rating.beats`): the answer makes it the board's default
player only then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import progress
from pipeline.apps.knucklebones.distill import BASELINE, held_out_positions, provenance
from pipeline.apps.knucklebones.rating import Decisions, Rating, beats, from_file, rate_all
from pipeline.apps.knucklebones.rating import decisions as labelled_decisions
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import KnuckleRules, board_game, board_name
from pipeline.games.knucklebones.players.evaluator import Evaluator
from pipeline.games.knucklebones.players.fitted import Plan, Round, learn
from pipeline.games.knucklebones.players.names import player_name, player_record

#: The search a full-game player must beat to become the default. The deepest of ours within a
#: move's 20 ms on one core through whole games is ours-d4 (ours-d5: 30 ms a move on average,
#: up to 100 in the opening); beating ours-d5 on every measure is the stricter test.
FULL_GAME_BASELINE = "ours-d5"
#: Where a rating's decisions come from when a board has no decisions file.
LABELLED = "held-out labelled positions"


@dataclass(frozen=True)
class Learned:
    """An evaluator learned here, its rounds, and how its player was measured."""

    evaluator: Evaluator
    rounds: list[Round]
    ratings: list[Rating]
    decisions: str
    """Where the rating's decisions came from."""
    seconds: float


def held_decisions(
    rules: KnuckleRules,
    data_dir: Path | None,
    decisions_file: Path | None,
    limit: int,
    seed: int,
) -> tuple[Decisions, str]:
    """Held-out exact decisions of ``rules``' board to rate players on, and where they come
    from: a decisions file (``decisions_file``, else the board's packaged one: the full
    game's), every decision in it; else at most ``limit`` from the held-out labelled
    positions (:func:`~pipeline.apps.knucklebones.distill.held_out_positions`)."""
    from pipeline.games.knucklebones.players import artefacts

    game = board_game(rules)
    file = decisions_file or artefacts.decisions_path(rules)
    if decisions_file is not None or file.exists():
        try:
            found = artefacts.read_decisions(file, rules)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read exact decisions from {file}: {exc}") from None
        return from_file(game, found), f"{file.name} ({len(found):,} exact decisions)"
    packaged = artefacts.path("labelled", rules)
    held = held_out_positions(
        rules, data_dir, max(limit // 4, 200), seed, packaged if packaged.exists() else None
    )
    asked = labelled_decisions(game, held, limit, seed + 1)
    return asked, f"{LABELLED} (values: {held.meta.get('values', '?')})"


def self_play(
    rules: KnuckleRules,
    plan: Plan,
    depth: int,
    deeper: int,
    data_dir: Path | None,
    decisions: int = 3000,
    decisions_file: Path | None = None,
    command: str = "",
    leaves: int = 0,
) -> Learned:
    """Learn an evaluator of ``rules``' board by ``plan``, then rate its player
    (``net-d{depth}``, close calls ``deeper`` deep as far as ``leaves``), the baseline search
    and, where the board has one, the packaged exact-label model's player on held-out exact
    decisions; the record holds the plan, the rounds, the ratings, whether the player beat the
    baseline on every measure, and the provenance (command, seed, code hash, seconds)."""
    from pipeline.games.knucklebones.players.artefacts import packaged_evaluator
    from pipeline.games.knucklebones.players.engine import Player

    t0 = time.perf_counter()
    game = board_game(rules)
    with progress.task("fitted value iteration", total=plan.rounds, unit="rounds") as job:
        model, rounds = learn(game, plan, report=lambda r: job.advance(1))
    learned = time.perf_counter() - t0
    asked, source = held_decisions(rules, data_dir, decisions_file, decisions, plan.seed + 1)
    name = player_name("net", depth, deeper, leaves)
    # the search it must beat on every measure
    base = FULL_GAME_BASELINE if board_name(rules) == board_name(KnuckleRules()) else BASELINE
    made: dict[str, Any] = {name: Player(game, name, model), base: Player(game, base)}
    exact_label = packaged_evaluator(rules.columns, rules.rows, rules.faces)
    if exact_label is not None and exact_label.meta.get("method") != model.meta.get("method"):
        made[f"{name} (fitted to exact values)"] = Player(game, name, exact_label)
    ratings = rate_all(made, asked, plan.seed + 2)
    model.meta.update({
        **player_record(depth, deeper, leaves), "board": model.board,
        "beats_search": beats(ratings[0], ratings[1]), "baseline": base,
        "held_out": {"decisions": len(asked), "from": source},
        "ratings": [r.row() for r in ratings], "command": command, "seed": plan.seed,
        "training_seconds": round(learned, 1),
        **provenance("none: learned from the rules alone", 0.0, t0),
    })  # fmt: skip
    return Learned(model, rounds, ratings, source, time.perf_counter() - t0)
