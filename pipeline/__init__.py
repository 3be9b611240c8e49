"""stb-pipeline: exact solutions of Shut the Box family dice games, as Parquet tables.

The Python API (see README, "Python API"): :func:`load_table`, :func:`expect`, :func:`best_move`,
:func:`move_values`, :func:`position`, :func:`board`, :func:`query` and
:func:`knucklebones_column`, from :mod:`pipeline.api`.
They load on first use, so that importing one layer (say :mod:`pipeline.solve.rank_order`)
loads neither polars nor any game.

Layers, each importing only those before it (docs/architecture.md):
``errors`` -> ``graph`` -> ``solve`` -> ``games`` -> ``store`` -> ``stages`` -> ``analysis`` ->
``answer`` -> ``apps`` -> ``api`` / ``cli``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "best_move",
    "board",
    "expect",
    "knucklebones_column",
    "load_table",
    "move_values",
    "position",
    "query",
]

if TYPE_CHECKING:
    from pipeline.api import (
        best_move,
        board,
        expect,
        knucklebones_column,
        load_table,
        move_values,
        position,
        query,
    )


def __getattr__(name: str) -> Any:
    """Load the API functions on first use (PEP 562)."""
    if name in __all__:
        from pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
