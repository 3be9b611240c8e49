"""The nine-tile N-player games against an independent solver, every state (issue 34).

docs/variants.md gives the first player's share at the start of `three-player` (0.3408858878),
`four-player` (0.2617067533) and `three-player-two-dice` (0.3365283855). No source outside the
project publishes them: they are computed here, and checked against
tests/support/nplayer_turns_reference.py, a solver written from the rules alone that keeps, of
the earlier scores, the lowest and which seats hold it (the exact-fraction reference keeps every
score: millions of positions on nine tiles; it checks the small boards in test_nplayer.py).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.store.layout import variant_file
from tests.support.nplayer_turns_reference import turns_solver

#: variant -> (players, one die (forced) at this open sum or less, docs/variants.md's value)
NINE_TILES = {
    "three-player": (3, 6, 0.3408858878),
    "four-player": (4, 6, 0.2617067533),
    "three-player-two-dice": (3, 0, 0.3365283855),
}
COLUMNS = ["player", "open_tiles", "best_score", "best_count", "value", "share_holder",
           "share_beaten", *(f"share_{k}" for k in range(1, 7))]  # fmt: skip


def states(data: Path, variant: str) -> pl.DataFrame:
    """A variant's states rows (it is stored on its own)."""
    path = variant_file(data, "states", variant)
    return pl.read_parquet(path, columns=["variant", *COLUMNS]).filter(variant=variant)


@pytest.mark.parametrize("variant", list(NINE_TILES))
def test_every_state_equals_the_turns_reference(built_by_name: Path, variant: str) -> None:
    players, one_die_sum, documented = NINE_TILES[variant]
    play = turns_solver(players, 9, one_die_sum=one_die_sum)
    # docs/variants.md, named variants: player 1's share at the start (computed here)
    start = play(1, (1 << 9) - 1, None, 0)
    assert abs(start[0] - documented) <= 5e-11
    assert abs(sum(start) - 1) <= 1e-12
    table = states(built_by_name, variant)
    assert table.height > 0
    for row in table.iter_rows(named=True):
        seat, count = row["player"], row["best_count"] or 0
        mask = sum(1 << (t - 1) for t in row["open_tiles"])
        # which earlier seats hold the lowest score does not matter: take the first `count`
        want = play(seat, mask, row["best_score"], (1 << count) - 1)
        where = (variant, seat, row["open_tiles"], row["best_score"], count)
        assert abs(row["value"] - want[seat - 1]) <= 1e-12, where
        for k in range(seat, players + 1):
            assert abs(row[f"share_{k}"] - want[k - 1]) <= 1e-12, (where, k)
        if count:
            assert abs(row["share_holder"] - want[0]) <= 1e-12, where
        if count < seat - 1:
            assert abs(row["share_beaten"] - want[count]) <= 1e-12, where
