"""Pig's named variants: what the entry point ``stb_pipeline.families: pig`` loads."""

from __future__ import annotations

from typing import Any

from pipeline.games.registry import Variant, register

#: The goals built (Neller and Presser play to 100): 12 and 20 build in a second, but there
#: rolling again is worth more in every decision; at 50 holding is best in 8 % of them.
GOALS = (12, 20, 50)


def _variant(goal: int) -> Variant:
    def make() -> Any:
        from stb_pig.game import Pig

        return Pig(goal)

    return Variant(
        f"pig-{goal}",
        f"Pig to {goal} (Neller and Presser 2004): roll a die, add it to the turn total or lose "
        "it on a 1; hold to bank it; maximise P(win)",
        make,
        in_all=False,
        family="pig",
        view="state",
    )


for _goal in GOALS:
    register(_variant(_goal))
