"""`stb-pipeline play`: a game in the terminal that ranks every choice from the solved tables.

No `from __future__ import annotations` here: typer reads the annotations at run time, and
the shared option types come from `pipeline.cli.app` inside `register`.
"""

import sys
from typing import Annotated

import typer

from pipeline.games.registry import Variant


def register(app: typer.Typer) -> None:
    """Add the `play` command."""
    from pipeline.cli.options import (
        DEFAULT_DATA_DIR,
        DataDir,
        OneVariant,
        out,
        pick_one,
        with_rules,
    )

    @app.command("play")
    @with_rules
    def play_cmd(
        variant: OneVariant = None,
        seed: Annotated[
            int | None,
            typer.Option("--seed", help="Seed of the dice (random when left out; always printed)."),
        ] = None,
        seat: Annotated[
            int,
            typer.Option(
                "--seat",
                help="Games of several players (two-player, four-player, ...): your seat 1..N, "
                "the solver plays the others; 0 watches the solver play every seat.",
            ),
        ] = 1,
        quiz: Annotated[
            bool,
            typer.Option("--quiz", help="Hide the values until you have chosen."),
        ] = False,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        custom: Variant | None = None,
    ) -> None:
        """Play a game in the terminal; every choice is ranked and your mistakes are totalled.

        Type the number of a choice and Enter; q (or end of input) stops. Answers can be piped.

        Example: printf '1\\n1\\n1\\n' | stb-pipeline play --variant classic --seed 7
        """
        from pipeline.apps.seats import check_seat

        chosen = pick_one(variant, custom, data_dir)
        check_seat(chosen.name, chosen.players, seat)  # at once: before any game or table
        from pipeline.apps import teaching_game as play

        coach = play.Coach(data_dir, chosen)
        console = out.real()
        ask = play.line_asker(sys.stdin.readline, console, echo=not sys.stdin.isatty())
        play.play_game(coach, ask, console, seed=seed, show_values=not quiz, seat=seat)
