"""Streamed Shut the Box batches as rows of the graph build's tables (polars): the test's
adapter that shows the streamed solver and the graph build agree row for row.

:mod:`pipeline.games.shutbox.stream` yields numeric columns only (ids, masks, values). The
tables ``pipeline.stages.frames`` writes also describe each state and move in words: ``tiles``,
``open_tiles``, ``best_move`` (a list of tiles) and ``next_tiles``. These helpers add them, one
batch at a time, in the graph build's column order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from pipeline.games.shutbox.game import ShutTheBox


def _series(cols: Mapping[str, np.ndarray], name: str, dtype: pl.DataType) -> pl.Series:
    """A column of the batch as a polars Series, masked entries null."""
    col = cols[name]
    if isinstance(col, np.ma.MaskedArray):
        return pl.Series(name, np.ma.getdata(col), dtype=dtype).set(
            pl.Series(np.ma.getmaskarray(col)), None
        )
    return pl.Series(name, col, dtype=dtype)


def _described(game: ShutTheBox, ids: np.ndarray, prefix: str = "") -> pl.DataFrame:
    """``{prefix}state_id`` and ``{prefix}tiles`` of state ids (null where the id is < 0)."""
    tiles = game._tile_columns(ids)["tiles"]
    ok = pl.Series(ids >= 0)
    return pl.DataFrame(
        {
            f"{prefix}state_id": pl.Series(ids).zip_with(ok, pl.Series([None], dtype=pl.Int64)),
            f"{prefix}tiles": tiles,
        }
    )


def states_frame(
    game: ShutTheBox, cols: Mapping[str, np.ndarray], objective: str, maximise: bool
) -> pl.DataFrame:
    """A states batch as rows of today's ``states`` table (without ``variant``)."""
    ids = np.asarray(cols["state_id"])
    return (
        pl.DataFrame({"state_id": ids})
        .hstack(game.describe_states(ids))
        .with_columns(
            terminal=pl.Series(np.asarray(cols["terminal"])),
            rank=pl.Series(np.asarray(cols["rank"]), dtype=pl.Int32),
            objective=pl.lit(objective),
            maximise=pl.lit(maximise),
            value=pl.Series(np.asarray(cols["value"])),
            dice=_series(cols, "dice", pl.Int16()),
            choice_options=pl.Series(np.asarray(cols["choice_options"]), dtype=pl.Int16),
            residual=pl.lit(0.0),
        )
    )


def policy_frame(game: ShutTheBox, cols: Mapping[str, np.ndarray]) -> pl.DataFrame:
    """A policy batch as rows of today's ``policy`` table (without ``variant``)."""
    ids = np.asarray(cols["state_id"])
    label = np.ma.getdata(cols["best_move_mask"]).astype(np.int64)
    stuck = np.asarray(cols["stuck"])
    label = np.where(stuck, -1, label)
    nxt = np.where(stuck, -1, ids ^ label)
    return (
        _described(game, ids)
        .hstack(
            [
                pl.Series("roll", np.asarray(cols["roll"]), dtype=pl.Int16),
                pl.Series("stuck", stuck),
                game.describe_moves(label).alias("best_move"),
            ]
        )
        .hstack(_described(game, nxt, prefix="next_"))
        .with_columns(
            value=pl.Series(np.asarray(cols["value"])),
            n_optimal=pl.Series(np.asarray(cols["n_optimal"]), dtype=pl.Int16),
            n_moves=pl.Series(np.asarray(cols["n_moves"]), dtype=pl.Int16),
            # one player: a roll with no legal move ends the game (see frames.move_kind)
            kind=pl.Series(np.where(stuck, "end", "move"), dtype=pl.String),
        )
    )
