"""Named Double Shutter variants (the Double Shutter article)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from pipeline.games.registry import Variant, register


def _game(thresholds: Sequence[int] = (), **rules: Any) -> Any:
    from pipeline.games.double_shutter.game import DoubleShutter, DoubleShutterRules

    return DoubleShutter(DoubleShutterRules(**rules), thresholds=thresholds)


register(
    Variant(
        "double-shutter",
        "Double Shutter (two rows of 9 tiles), one die by choice once the shuttable tiles sum to "
        "6 or less, minimise the expected score 2 x front + back; summary p(n) (the Double "
        "Shutter article)",
        partial(_game, thresholds=range(21)),
        family="double_shutter",
        view="rows",
    )
)
register(
    Variant(
        "double-shutter-zero",
        "as double-shutter, maximise P(final score = 0) (the Double Shutter article)",
        partial(_game, objective="shut"),
        family="double_shutter",
        view="rows",
    )
)
