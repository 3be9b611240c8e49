"""The dry run of benchmarks/gpu_session.py: a GPU machine's conditions on this one.

On ``PYTHONPATH`` (``gpu_session.py dry`` puts it first) Python imports this module at start-up.
It refuses polars, duckdb and matplotlib as a GPU machine lacks them (tests/support/without;
``$STB_WITHOUT`` names others), and makes the full game's commands quick: the variants
``knucklebones`` and ``knucklebones-score`` become 2x2 boards with a two-sided die built by the
full game's path (the lean tables: ``MAX_STREAM_STATES`` 0), whose own files the answers read
a row group at a time, as the full game's. The commands are the GPU session's own, word for
word; numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set by the session) stands in for the
GPU.
"""

from __future__ import annotations

import dataclasses
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
runpy.run_path(str(ROOT / "tests" / "support" / "without" / "sitecustomize.py"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _stand_ins() -> None:
    from pipeline.games.knucklebones import stream
    from pipeline.games.knucklebones.columns import BoardRules
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.registry import REGISTRY

    REGISTRY._load()
    for name, objective in (("knucklebones", "wins"), ("knucklebones-score", "score")):
        rules = KnuckleRules(2, 2, 2, objective)

        def make(rules: KnuckleRules = rules) -> stream.StreamedKnucklebones:
            return stream.StreamedKnucklebones(rules)

        def board(rules: KnuckleRules = rules) -> BoardRules:  # what the answers read
            return BoardRules(Knucklebones(rules))

        found = REGISTRY._items[name]
        REGISTRY._items[name] = dataclasses.replace(found, make=make, board=board)
    stream.MAX_STREAM_STATES = 0


_stand_ins()
