"""`stb-pipeline play`: a game in the terminal that ranks every choice from the solved tables.

No `from __future__ import annotations` here: typer reads the annotations at run time.
"""

import sys
from typing import Annotated

import typer

from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, OneVariant, out, pick_one, with_rules
from pipeline.games.registry import Variant

Seed = Annotated[
    int | None,
    typer.Option("--seed", help="Seed of the dice (random when left out; always printed)."),
]
Seat = Annotated[
    int,
    typer.Option(
        "--seat",
        help="Games of several players (two-player, four-player, ...): your seat 1..N, the "
        "solver plays the others; 0 watches the solver play every seat.",
    ),
]
Quiz = Annotated[bool, typer.Option("--quiz", help="Hide the values until you have chosen.")]
Rule = Annotated[
    str | None,
    typer.Option(
        "--rule",
        help="One-player boxes: say at each choice what a rule would play and where it has an "
        "exception worth learning: best (best-1, best-2: fewer keys; needs `stb-pipeline "
        "strategies`), greedy, max-tiles, fewest-tiles, most-options, most-outcomes, or keys "
        "such as max-high,min-count.",
    ),
]


@with_rules
def play_cmd(
    variant: OneVariant = None,
    seed: Seed = None,
    seat: Seat = 1,
    quiz: Quiz = False,
    rule: Rule = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    custom: Variant | None = None,
) -> None:
    """Play a game in the terminal; every choice is ranked and your mistakes are totalled.

    Type the number of a choice and Enter; q (or end of input) stops. Answers can be piped.

    Example: printf '1\\n1\\n1\\n' | stb-pipeline play --variant classic --seed 7 --rule greedy
    """
    from pipeline.apps.seats import check_seat

    chosen = pick_one(variant, custom, data_dir)
    check_seat(chosen.name, chosen.players, seat)  # at once: before any game or table
    from pipeline.apps import teaching_game as play

    coach = play.Coach(data_dir, chosen)
    advise = None
    if rule is not None:
        from pipeline.apps.rule_coach import rule_coach

        advise = rule_coach(data_dir, chosen, rule).advice
    console = out.real()
    ask = play.line_asker(sys.stdin.readline, console, echo=not sys.stdin.isatty())
    play.play_game(coach, ask, console, seed=seed, show_values=not quiz, seat=seat, advise=advise)


def register(app: typer.Typer) -> None:
    """Add the `play` command."""
    app.command("play")(play_cmd)
