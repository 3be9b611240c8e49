"""The `summary` table: headline figures of each solved variant, one row per figure.

A game offers its figures through :meth:`pipeline.games.base.Game.summary` (Double Shutter: the
minimum expected score, P(score != 0), and p(n) for n = 0..20); `build` writes them to
`summary.parquet` through this hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from pipeline.stages import Solved


def summary_rows(s: Solved) -> dict[str, pl.DataFrame]:
    """The `summary` rows of one variant (no table when its game reports no figures)."""
    frame = s.game.summary(s.graph, s.solve())
    return {} if frame is None or frame.height == 0 else {"summary": frame}
