"""stb-pipeline: exact solutions of Shut the Box family dice games, as Parquet tables.

The Python API (see README, "Python API"): :func:`load_table`, :func:`expect`, :func:`best_move`,
:func:`move_values` and :func:`query`, from :mod:`pipeline.api`.
"""

__version__ = "0.1.0"

# After __version__: the API's modules import it from this package.
from pipeline.api import best_move, expect, load_table, move_values, query

__all__ = ["__version__", "best_move", "expect", "load_table", "move_values", "query"]
