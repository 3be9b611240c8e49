"""Named Double Shutter variants (the Double Shutter article)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.games.registry import Variant, register


def double_shutter(
    name: str, description: str, thresholds: range | tuple[int, ...] = (), **rules: Any
) -> Variant:
    """Register a Double Shutter variant with the given rule fields: its game made on first use,
    its positions read without the game (``DoubleShutterRules.parse_state``)."""

    def make() -> Any:
        from pipeline.games.double_shutter.game import DoubleShutter, DoubleShutterRules

        return DoubleShutter(DoubleShutterRules(**rules), thresholds=thresholds)

    def parser() -> Callable[..., int]:
        from pipeline.games.double_shutter.rules import DoubleShutterRules  # (loaded when used)

        return DoubleShutterRules(**rules).parse_state

    return register(
        Variant(
            name, description, make, family="double_shutter", view="rows", parser=parser
        )
    )  # fmt: skip


double_shutter(
    "double-shutter",
    "Double Shutter (two rows of 9 tiles), one die by choice once the shuttable tiles sum to "
    "6 or less, minimise the expected score 2 x front + back; summary p(n) (the Double "
    "Shutter article)",
    thresholds=range(21),
)
double_shutter(
    "double-shutter-zero",
    "as double-shutter, maximise P(final score = 0) (the Double Shutter article)",
    objective="shut",
)
