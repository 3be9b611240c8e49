"""Every value of the Knucklebones tables against an independent solver (issue 34).

tests/support/knucklebones_reference.py plays Knucklebones from its rules alone (no code of
``pipeline``): it reads each row's position from the ``tiles`` text, finds every position
reachable from it, and solves them by value iteration on two bounds. Both objectives (win
probability with a draw as 1/2, expected score difference) of

- small boards built through `build`'s two paths: the graph build of the shared tables and the
  graph-free streamed build of a board stored on its own (1, 2 and 3 columns; 2 and 3 rows;
  two- and three-faced dice, where removals are most frequent);
- ``knucklebones-2x2`` and its ``-score`` twin from the session's `build --variant all`, whose
  start values docs/variants.md gives (0.5717476480 and 1.9563511667). No source outside the
  project publishes them: they are computed here, by the project and by the reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.games.knucklebones.exact.stream import StreamedKnucklebones
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.registry import Variant
from pipeline.stages import build
from pipeline.store.layout import variant_file
from tests.support.knucklebones_reference import Reference, key_of, parse_position

#: Board (columns, rows, faces) -> how `build` writes it: shared (graph) or its own files
#: (streamed, without a graph).
BOARDS = {
    (1, 3, 3): "shared",
    (2, 2, 3): "shared",
    (3, 2, 2): "own",
    (2, 3, 2): "own",
}


def board_name(board: tuple[int, int, int], objective: str) -> str:
    columns, rows, faces = board
    return f"kb-{columns}x{rows}-d{faces}" + ("-score" if objective == "score" else "")


def board_variant(board: tuple[int, int, int], objective: str) -> Variant:
    """An ad hoc variant of the board, built as BOARDS says (no such board is registered)."""
    rules = KnuckleRules(*board, objective=objective)
    own = BOARDS[board] == "own"
    game = StreamedKnucklebones if own else Knucklebones
    return Variant(
        board_name(board, objective),
        f"{board} Knucklebones board for the reference test",
        lambda: game(rules),
        in_all=False,
        family="knucklebones",
        separate=own,
    )


@pytest.fixture(scope="module")
def small_boards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small boards' tables, both objectives, written by the build stages."""
    data = tmp_path_factory.mktemp("kb-reference")
    variants = [board_variant(b, o) for b in BOARDS for o in ("wins", "score")]
    build.run(variants, build.STAGES, data)
    return data


def states(data: Path, variant: str) -> pl.DataFrame:
    """A variant's states rows (tiles, value), from the file that holds them."""
    path = variant_file(data, "states", variant)
    frame = pl.read_parquet(path, columns=["variant", "state_id", "tiles", "value"])
    return frame.filter(variant=variant).sort("state_id")


def assert_every_state_agrees(
    data: Path, board: tuple[int, int, int], names: dict[str, str]
) -> Reference:
    """Both objectives' tables of ``board`` equal the reference at every state (1e-12)."""
    tables = {objective: states(data, name) for objective, name in names.items()}
    wins, score = tables["wins"], tables["score"]
    # one set of positions for both objectives, in the same state id order
    assert wins["tiles"].to_list() == score["tiles"].to_list()
    positions = [parse_position(t) for t in wins["tiles"]]
    ref = Reference(*board).solve(positions)
    # each row is a distinct position, and every position reachable from them has its row
    ids = np.array([ref.index[key_of(*p)] for p in positions])
    assert len(set(ids.tolist())) == wins.height == len(ref.index)
    for objective, table in tables.items():
        assert ref.bound[objective] <= 1e-13
        off = np.abs(table["value"].to_numpy() - ref.values[objective][ids])
        worst = int(off.argmax())
        assert off[worst] <= 1e-12, (names[objective], table["tiles"][worst], off[worst])
    return ref


@pytest.mark.parametrize("board", list(BOARDS), ids=lambda b: f"{b[0]}x{b[1]}-d{b[2]}")
def test_small_boards_equal_the_reference_at_every_state(
    small_boards: Path, board: tuple[int, int, int]
) -> None:
    names = {o: board_name(board, o) for o in ("wins", "score")}
    assert_every_state_agrees(small_boards, board, names)


def test_knucklebones_2x2_equals_the_reference_and_the_docs(built: Path) -> None:
    names = {"wins": "knucklebones-2x2", "score": "knucklebones-2x2-score"}
    ref = assert_every_state_agrees(built, (2, 2, 6), names)
    start = ref.empty()
    # docs/variants.md, named variants: computed here (no outside source gives them)
    assert abs(ref.values["wins"][ref.index[start]] - 0.5717476480) <= 5e-11
    assert abs(ref.values["score"][ref.index[start]] - 1.9563511667) <= 5e-11
