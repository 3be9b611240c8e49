"""Which seat a player may take in `play`, checked from the variant alone (no game made, no
table read), so that a bad ``--seat`` is refused at once."""

from __future__ import annotations

from pipeline.errors import UsageError


def check_seat(variant: str, players: int, seat: int) -> None:
    """UsageError unless ``seat`` is one of the ``players`` seats of ``variant`` (0 watches
    every seat of a game of several players)."""
    if players == 1 and seat != 1:
        raise UsageError(
            f"--seat {seat} needs a game of several players; one-player games have seat 1 only"
        )
    if not 0 <= seat <= players:
        raise UsageError(f"--seat {seat}: {variant} has seats 1..{players} (0 to watch)")
