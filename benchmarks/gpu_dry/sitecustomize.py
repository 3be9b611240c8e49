"""The dry run of benchmarks/gpu_session.py: a GPU machine's conditions on this one.

On ``PYTHONPATH`` (``gpu_session.py dry`` puts it first) Python imports this module at start-up.
It refuses polars, duckdb and matplotlib as a GPU machine lacks them (tests/support/without;
``$STB_WITHOUT`` names others), and makes the full game's commands quick: the variants
``knucklebones`` and ``knucklebones-score`` become 2x2 boards with a two-sided die built by the
full game's path (the lean tables: ``MAX_STREAM_STATES`` 0), whose own files the answers read
a row group at a time, as the full game's. Their row groups hold :data:`DRY_ROWS` states, so
that a stand-in's table has dozens of them, as the full game's has thousands: the writer's
threads (16 in the dry run, as a GPU machine's cores) encode them side by side and splice them.
The commands are the GPU session's own, word for word; numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, set by the session) stands in for the GPU.
"""

from __future__ import annotations

import dataclasses
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: States per row group of the stand-ins' lean tables (the full game's: 1,048,576).
DRY_ROWS = 8
runpy.run_path(str(ROOT / "tests" / "support" / "without" / "sitecustomize.py"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _stand_ins() -> None:
    from pipeline.games.knucklebones.columns import BoardRules
    from pipeline.games.knucklebones.exact import stream
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.registry import REGISTRY
    from pipeline.store import stream_writer

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
    lean = stream.lean_stream

    def lean_stream(game: Knucklebones, rows: int = DRY_ROWS, device: str = "cuda") -> object:
        return lean(game, rows, device)

    stream.lean_stream = lean_stream  # type: ignore[assignment]
    stream_writer.ROW_GROUP_ROWS = DRY_ROWS


_stand_ins()
