"""The tables' own answers, read with DuckDB: a state's row, each roll's policy row, each move's
row. The reference every face of the library's answer (:mod:`pipeline.answer`) is checked
against: it reads the rows the build wrote, while the library reads only the values and lists
the moves from the rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.analysis.contracts import run_contract
from pipeline.store.layout import variant_file
from pipeline.store.schema import DERIVED
from pipeline.store.stream_writer import write_streamed_many

#: The tolerance the tests compare values with.
TOL = 1e-12


def contract_rows(name: str, data_dir: Path, variant: str | None = None) -> pl.DataFrame:
    """The rows breaking contract ``name`` (e.g. ``bellman``); none when it holds."""
    return run_contract(name, Path(data_dir), variant, set()).violations


def derived_select(table: str) -> str:
    """A DuckDB select list of every column of ``table`` with its :data:`DERIVED` columns
    filled in (``*`` when it has none)."""
    filled = DERIVED.get(table)
    if not filled:
        return "*"
    return "* replace (" + ", ".join(f"{sql} as {col}" for col, sql in filled.items()) + ")"


def rows(data: Path, table: str, variant: str, where: str, **params: Any) -> list[dict]:
    """``variant``'s rows of ``table`` matching ``where`` (bound parameters)."""
    path = variant_file(data, table, variant)
    if not path.exists():
        return []
    sql = (
        f"select {derived_select(table)} from read_parquet($path) "
        f"where variant = $variant and {where}"
    )
    with duckdb.connect() as con:
        cur = con.execute(sql, {"path": str(path), "variant": variant, **params})
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def state(data: Path, variant: str, state_id: int) -> dict[str, Any]:
    """The states row of ``state_id``."""
    found = rows(data, "states", variant, "state_id = $s", s=state_id)
    assert len(found) == 1, (variant, state_id)
    return found[0]


def policy(data: Path, variant: str, state_id: int) -> list[dict[str, Any]]:
    """The policy rows of ``state_id``, by roll, with ``best`` the best move as a list of
    tiles (decoded from the mask where the list is not written)."""
    found = rows(data, "policy", variant, "state_id = $s order by roll", s=state_id)
    for r in found:
        r["best"] = r["best_move"] if r["best_move"] is not None else _tiles(r["best_move_mask"])
    return found


def moves(data: Path, variant: str, state_id: int, roll: int) -> list[dict[str, Any]]:
    """The moves rows of (``state_id``, ``roll``), each ``move`` a list of tiles."""
    found = rows(data, "moves", variant, "state_id = $s and roll = $r", s=state_id, r=roll)
    for r in found:
        if r["move"] is None:
            r["move"] = _tiles(r["move_mask"])
    return found


def _tiles(mask: int | None) -> list[int] | None:
    return None if mask is None else [t + 1 for t in range(64) if mask >> t & 1]


def close(a: float | None, b: float | None) -> bool:
    """Equal within the tests' tolerance (relative above 1)."""
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TOL * max(1.0, abs(b))


def check_position(found: dict[str, Any], data: Path, variant: str) -> None:
    """``found`` (an answer's JSON: ``state``, ``rolls``, with a roll ``outcome`` and
    ``moves``) says what the tables say: the state's value and dice, each roll's kind, best move,
    value and number of moves (the policy), and the roll's moves with their values, regrets and
    the policy's pick (the moves table), ranked by regret with the pick first among equals."""
    state_id = found["state"]["id"]
    row = state(data, variant, state_id)
    assert close(found["state"]["value"], row["value"])
    assert found["state"]["dice"] == row["dice"]
    assert found["state"]["terminal"] == row["terminal"]
    if row["tiles"] is not None:
        assert found["state"]["tiles"] == row["tiles"]
    table = policy(data, variant, state_id)
    assert [r["roll"] for r in found["rolls"]] == [r["roll"] for r in table]
    for got, want in zip(found["rolls"], table, strict=True):
        assert got["kind"] == want["kind"], (variant, state_id, got, want)
        assert got["best"] == want["best"], (variant, state_id, got, want)
        assert close(got["value"], want["value"]), (variant, state_id, got, want)
        assert got["moves"] == want["n_moves"]
    if found.get("roll") is None:
        return
    want_moves = moves(data, variant, state_id, found["roll"])
    if not want_moves and not rows(data, "moves", variant, "true limit 1"):
        return  # a big box built without its moves table: the policy above is the reference
    got = {tuple(m["move"]): m for m in found["moves"]}
    assert set(got) == {tuple(m["move"]) for m in want_moves}
    for m in want_moves:
        mine = got[tuple(m["move"])]
        assert mine["next_id"] == m["next_state_id"]
        assert close(mine["value"], m["value"]) and close(mine["regret"], m["regret"])
        assert mine["best"] == m["is_best"]
    regrets = [m["regret"] for m in found["moves"]]
    assert regrets == sorted(regrets)
    if found["moves"]:  # the pick ties with the best (it may trail it in the last bits)
        (pick,) = [m for m in found["moves"] if m["best"]]
        assert pick["regret"] <= TOL * max(1.0, abs(pick["value"]))


def write_streamed(
    path: Path | str,
    batches: Iterable[Mapping[str, np.ndarray]],
    schema: pa.Schema,
    constants: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Write ``batches`` (numpy columns) to the Parquet file ``path`` with ``schema``.

    A schema field missing from a batch is filled with its value in ``constants`` (e.g. the
    variant name); ``options`` are ParquetWriter options (default: the store's). Returns the
    number of rows written. The file appears only when complete.
    """
    rows = write_streamed_many(
        {"t": Path(path)},
        ({"t": b} for b in batches),
        {"t": schema},
        {"t": constants or {}},
        {"t": options} if options else None,
    )
    return rows["t"]
