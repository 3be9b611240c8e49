"""The named two-player variant (the course assignment's rules)."""

from __future__ import annotations

from typing import Any

from pipeline.games.registry import Variant, register


def _make() -> Any:
    from pipeline.games.two_player.game import TwoPlayer, TwoPlayerRules

    return TwoPlayer(TwoPlayerRules())


register(
    Variant(
        "two-player",
        "two players, 9 tiles, one die (forced) once the mover's open tiles sum to 6 or less; "
        "value = the mover's expected wins (the course assignment)",
        _make,
        family="two_player",
    )
)
