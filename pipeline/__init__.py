"""stb-pipeline: exact solutions of Shut the Box family dice games, as Parquet tables.

The Python API (see README, "Python API"): :func:`load_table`, :func:`scan`, :func:`dataset`,
:func:`expect`, :func:`best_move`, :func:`move_values`, :func:`position`, :func:`board`,
:func:`query` and :func:`knucklebones_column`, from :mod:`pipeline.api`.
They load on first use, so that importing one layer (say :mod:`pipeline.solve.rank_order`)
loads neither polars nor any game.

Layers, each importing only those before it (docs/architecture.md): ``_version`` ->
``errors`` -> ``progress`` -> ``graph`` -> ``solve`` -> ``games`` -> ``store`` -> ``stages`` ->
``analysis`` -> ``answer`` -> ``apps`` -> ``api`` -> ``cli``; this module, the package's face,
stands on top and nothing of the package imports it (the version lives in
:mod:`pipeline._version`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline import _kernel_target
from pipeline._version import __version__

# before any module of the package imports numba: the CPU its kernels are compiled for
_kernel_target.choose()

__all__ = [
    "__version__",
    "best_move",
    "board",
    "dataset",
    "expect",
    "knucklebones_column",
    "load_table",
    "move_values",
    "position",
    "query",
    "scan",
]

if TYPE_CHECKING:
    from pipeline.api import (
        best_move,
        board,
        dataset,
        expect,
        knucklebones_column,
        load_table,
        move_values,
        position,
        query,
        scan,
    )


def __getattr__(name: str) -> Any:
    """Load the API functions on first use (PEP 562)."""
    if name in __all__:
        from pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API beside what is loaded (PEP 562): ``dir(pipeline)`` and tab completion list the
    functions before their first use has loaded them."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
