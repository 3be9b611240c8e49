"""What the `knucklebones` commands share: the board option, the limits of games and seeds, and
the console they print to (its own module, so that every command module of the group can use
them without importing another)."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli.options import LazyConsole
from pipeline.errors import UsageError

BoardVariant = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        help="A Knucklebones board and die, e.g. knucklebones-2x2 (default: the full game).",
    ),
]
#: Largest --games per pair (a day of depth-1 games) and --seed (the seeds must fit int64).
MAX_GAMES = 10_000_000
MAX_SEED = 2**62

out = LazyConsole(highlight=False, soft_wrap=True)


def within(option: str, value: float, low: float, high: float) -> None:
    """UsageError, in the option's words, unless ``low <= value <= high``."""
    if not low <= value <= high:
        raise UsageError(f"{option} must be between {low:,} and {high:,}, not {value}")
