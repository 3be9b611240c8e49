"""Make some installed packages unimportable, as on a machine that lacks them (issue 31).

On ``PYTHONPATH``, Python imports this module at start-up (``site`` imports ``sitecustomize``).
It puts a finder first on ``sys.meta_path`` that answers every import of a package named in
``$STB_WITHOUT`` (comma-separated; default: polars, duckdb, matplotlib) with
``ModuleNotFoundError``, the error a machine without the package gives. Used by
tests/games/knucklebones/test_knucklebones_light.py and the dry run of
benchmarks/gpu_session.sh.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

DEFAULT = "polars,duckdb,_duckdb,matplotlib"


class _Without:
    """A meta path finder that refuses the packages it names."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(
        self, name: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


_names = {n.strip() for n in os.environ.get("STB_WITHOUT", DEFAULT).split(",") if n.strip()}
sys.meta_path.insert(0, _Without(_names))
