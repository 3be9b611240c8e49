"""DuckDB's compiled engine, without the Python wrappers of the duckdb package.

``import duckdb`` re-exports ``_duckdb`` (duckdb 1.4 on) behind about 0.1 s of Python
(relations, expressions, its version from importlib.metadata) that a lookup (`stb-pipeline
expect`) and the catalog's writer never use; an older duckdb has no such module, and is
imported whole.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def engine() -> Any:
    """The module whose ``connect()`` opens a DuckDB database (and whose ``Error`` it raises)."""
    try:
        return importlib.import_module("_duckdb")
    except ImportError:
        return importlib.import_module("duckdb")


def available() -> bool:
    """Whether DuckDB can be imported here: a GPU machine that runs the full game's build may
    have pyarrow and numba but not DuckDB (issue 31), and the build must not need it. Not
    cached: DuckDB may be installed later in the same process (the engine, once found, is)."""
    try:
        engine()
    except ImportError:
        return False
    return True
