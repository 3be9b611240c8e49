"""Labelled Knucklebones positions: where a player is measured against exact values, and what
an evaluator is fitted to.

A labelled position is a canonical position before the roll with its exact value and the exact
value of every choice, (die, column), in both objectives: the win chance (a draw counting 1/2)
and the expected final score difference. A choice is worth its successor's value seen from the
other side (``1 - win``, ``-diff``). Choices are numbered ``die_index * columns + j``, ``j`` the
column's place in the canonical (sorted) position; a choice that is no move (a full column, or a
column holding the same pair as the one before it, which is that column's move) is -1 / NaN.

Positions come from two sources:

- ``play``: every position met in games between the project's own players
  (:data:`PLAYERS`: random, greedy, the Rust solver's heuristic and our search at small depths),
  each game's two players drawn at random, dice and tie-breaks from one seeded generator: the
  positions people and programs meet, not the odd corners of the state space;
- ``uniform``: positions drawn uniformly by state id among those still in play.

The games are played in compiled code on canonical positions (the order of a position's
columns never matters to its value), so a hundred thousand positions take seconds. The values
come from a ``lookup`` (state ids to values): the exact solution of a board in memory, or a
GPU's bounds. The Bellman equation holds among a labelled position's own numbers (its value
is the mean over dice of its best choice): :func:`bellman_residual` checks it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np

from pipeline.games.knucklebones import rules as move_rules
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.search import OURS, SEED, Searcher, move_table

#: The players of the ``play`` games: (name, kind, depth); kind 0 random, 1 greedy, 2 our
#: search, 3 the Rust solver's heuristic (depth in placements).
PLAYERS: tuple[tuple[str, int, int], ...] = (
    ("random", 0, 0),
    ("greedy", 1, 0),
    ("seed-d2", 3, 2),
    ("ours-d1", 2, 1),
    ("ours-d2", 2, 2),
    ("ours-d3", 2, 3),
)
#: The longest game played (placements): removals can prolong a game, rarely by much.
MAX_PLIES = 200
#: Objectives and the names of their values in a labelled set.
FIELDS = {"wins": "win", "score": "diff"}

#: A lookup of exact values: state ids -> float64 values, one objective.
Lookup = Callable[[np.ndarray], np.ndarray]
#: One position in this many is held out: never an evaluator's training example, always where
#: players are measured (:func:`held_out`).
HELD_OUT_EVERY = 10


def held_out(state_id: np.ndarray) -> np.ndarray:
    """Whether each state id is held out: a fixed hash of the id (splitmix64's finaliser), so
    the split is the same on every machine and for every labelled set of a board."""
    with np.errstate(over="ignore"):
        z = np.asarray(state_id, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(HELD_OUT_EVERY)) == 0


@dataclass
class Labelled:
    """Labelled positions of one board (its columns, rows and die): arrays of equal length."""

    columns: int
    rows: int
    faces: int
    state_id: np.ndarray
    """int64 canonical state ids (each once)."""
    source: np.ndarray
    """str: ``play`` or ``uniform``."""
    ply: np.ndarray
    """int16: placements before the position in its game (-1 for ``uniform``)."""
    dice: np.ndarray
    """int16: dice on the table (both boards)."""
    next_id: np.ndarray
    """int64 [n, faces * columns]: each choice's successor id (-1: no such move)."""
    values: dict[str, np.ndarray] = field(default_factory=dict)
    """Per objective built (``win``, ``diff``): the position's value [n]."""
    choices: dict[str, np.ndarray] = field(default_factory=dict)
    """Per objective built: each choice's value [n, faces * columns] (NaN: no such move)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """How the set was made: seed, games, players, sample sizes, the values' tolerance."""

    def __len__(self) -> int:
        return int(self.state_id.shape[0])

    def subset(self, keep: np.ndarray) -> Labelled:
        """The positions where ``keep`` (a boolean mask or indices)."""
        return Labelled(
            self.columns, self.rows, self.faces, self.state_id[keep], self.source[keep],
            self.ply[keep], self.dice[keep], self.next_id[keep],
            {k: v[keep] for k, v in self.values.items()},
            {k: v[keep] for k, v in self.choices.items()}, dict(self.meta),
        )  # fmt: skip


# -- the games -------------------------------------------------------------------------------


@numba.njit(cache=True)
def _greedy(pairs, face, place, mover_score, opp_score, u):
    """The column (index into sorted ``pairs``) with the best immediate change of the score
    difference; among equals the ``int(u * ties)``-th."""
    best, ties = -1e18, 0
    for j in range(pairs.shape[0]):
        g = _gain(pairs, j, face, place, mover_score, opp_score)
        if g > best:
            best, ties = g, 1
        elif g == best:
            ties += 1
    k = min(int(u * ties), ties - 1)
    for j in range(pairs.shape[0]):
        if _gain(pairs, j, face, place, mover_score, opp_score) == best:
            if k == 0:
                return j
            k -= 1
    return -1


@numba.njit(cache=True)
def _gain(pairs, j, face, place, mover_score, opp_score):
    """The immediate change of the score difference of column ``j`` (-1e18: no such move)."""
    if j > 0 and pairs[j] == pairs[j - 1]:
        return -1e18
    q = place[pairs[j], face - 1]
    if q < 0:
        return -1e18
    return (mover_score[q] - mover_score[pairs[j]]) + (opp_score[pairs[j]] - opp_score[q])


@numba.njit(cache=True)
def _random_column(pairs, face, place, u):
    """A uniformly random distinct legal column (index into sorted ``pairs``)."""
    n = 0
    for j in range(pairs.shape[0]):
        if (j == 0 or pairs[j] != pairs[j - 1]) and place[pairs[j], face - 1] >= 0:
            n += 1
    k = min(int(u * n), n - 1)
    for j in range(pairs.shape[0]):
        if (j == 0 or pairs[j] != pairs[j - 1]) and place[pairs[j], face - 1] >= 0:
            if k == 0:
                return j
            k -= 1
    return -1


@numba.njit(cache=True)
def _play_games(kinds, depths, seats, dice, uniforms, out_pairs, out_ply, place, swap, moved,
                mover_size, opp_size, mover_score, opp_score, binom, slots, faces, tt_key,
                tt_val, params, known, net):  # fmt: skip
    """Play every game (``seats[g]``: the two players' indices into ``kinds``/``depths``, the
    first moving first) with its row of ``dice`` and ``uniforms``; write every position met
    before a roll (sorted pairs) and its ply; return how many."""
    c = out_pairs.shape[1]
    n = 0
    scratch = np.zeros((c, 4))
    for g in range(seats.shape[0]):
        pairs = np.zeros(c, dtype=np.int64)
        for ply in range(dice.shape[1]):
            over, _ = _ended(pairs, mover_size, opp_size, mover_score, opp_score, slots)
            if over or n >= out_pairs.shape[0]:
                break
            out_pairs[n] = pairs
            out_ply[n] = ply
            n += 1
            face = dice[g, ply]
            who = seats[g, ply % 2]
            kind, depth, u = kinds[who], depths[who], uniforms[g, ply]
            if kind == 0:
                j = _random_column(pairs, face, place, u)
            elif kind == 1:
                j = _greedy(pairs, face, place, mover_score, opp_score, u)
            else:
                search = OURS if kind == 2 else SEED
                m = move_table(pairs, face, depth, search, scratch, place, swap, moved,
                               mover_size, opp_size, mover_score, opp_score, binom, slots, faces,
                               tt_key, tt_val, params, known, net)  # fmt: skip
                j = _searched_pick(scratch, m, search)
            sw = np.empty(c, dtype=np.int64)
            for k in range(c):
                sw[k] = swap[pairs[k]]
            nxt = np.empty(c, dtype=np.int64)
            move_rules.turned_after(sw, c, j, moved[pairs[j], face - 1], nxt)
            pairs = nxt
    return n


@numba.njit(cache=True)
def _searched_pick(rows, m, search):
    """The column of the best of ``m`` searched moves (rows: column, win, diff, exactness):
    by win chance then difference (ours), or by difference (the Rust solver's); the first
    among equals."""
    best = 0
    for i in range(1, m):
        if search == OURS:
            better = rows[i, 1] > rows[best, 1] or (
                rows[i, 1] == rows[best, 1] and rows[i, 2] > rows[best, 2]
            )
        else:
            better = rows[i, 2] > rows[best, 2]
        if better:
            best = i
    return int(rows[best, 0])


@numba.njit(cache=True)
def _ended(pairs, mover_size, opp_size, mover_score, opp_score, slots):
    """Whether a board is full, and the mover's score difference."""
    m_full, o_full, diff = 0, 0, 0.0
    for i in range(pairs.shape[0]):
        m_full += mover_size[pairs[i]]
        o_full += opp_size[pairs[i]]
        diff += mover_score[pairs[i]] - opp_score[pairs[i]]
    return m_full == slots or o_full == slots, diff


def play_positions(
    game: Knucklebones, games: int, seed: int, players: tuple[tuple[str, int, int], ...] = PLAYERS
) -> tuple[np.ndarray, np.ndarray]:
    """Every position met before a roll in ``games`` games between ``players`` (each game's two
    drawn at random, with ``seed``): (state ids, plies), in the order met, repeats included."""
    rng = np.random.default_rng(seed)
    seats = rng.integers(0, len(players), size=(games, 2))
    dice = rng.integers(1, game.r.faces + 1, size=(games, MAX_PLIES))
    uniforms = rng.random((games, MAX_PLIES))
    kinds = np.array([k for _, k, _ in players], dtype=np.int64)
    depths = np.array([d for _, _, d in players], dtype=np.int64)
    searcher = Searcher(game, tt_bits=18)
    cap = games * 4 * game.r.slots + 16
    out_pairs = np.empty((cap, game.r.columns), dtype=np.int64)
    out_ply = np.empty(cap, dtype=np.int64)
    n = _play_games(kinds, depths, seats, dice, uniforms, out_pairs, out_ply, *_common(searcher))
    return game.canonical(out_pairs[:n]), out_ply[:n]


def _common(searcher: Searcher) -> tuple:
    """The search's arrays, in the order the compiled functions take them."""
    return searcher._common()


def uniform_positions(game: Knucklebones, n: int, seed: int) -> np.ndarray:
    """``n`` distinct state ids drawn uniformly among the positions in play (fewer when the
    board has fewer)."""
    from pipeline.games.knucklebones.exact import pairs_of

    rng = np.random.default_rng(seed)
    if 2 * n >= game.n_states:  # a small board: draw among all of its live positions at once
        every = np.arange(game.n_states, dtype=np.int64)
        live = every[~game.terminal_mask(pairs_of(game.r, every))]
        return np.sort(rng.permutation(live)[:n])
    found: list[np.ndarray] = []
    total = drawn = 0
    # drawing 20 times the board's ids leaves no live position undrawn (e^-20): then the
    # board has fewer than n, and every one is found
    while total < n and drawn < 20 * game.n_states:
        size = max(2 * (n - total), 1024)
        ids = np.unique(rng.integers(0, game.n_states, size=size))
        drawn += size
        live = ids[~game.terminal_mask(pairs_of(game.r, ids))]
        found.append(live)
        total = len(np.unique(np.concatenate(found)))
    ids = np.unique(np.concatenate(found))
    return np.sort(rng.permutation(ids)[:n])


# -- labels ----------------------------------------------------------------------------------


def choice_ids(game: Knucklebones, ids: np.ndarray) -> np.ndarray:
    """[len(ids), faces * columns]: each choice's successor id (-1: no such move)."""
    from pipeline.games.knucklebones.exact import successor_ids

    return successor_ids(game.r, ids)


def label(
    game: Knucklebones,
    state_id: np.ndarray,
    source: np.ndarray,
    ply: np.ndarray,
    lookups: dict[str, Lookup],
    meta: dict[str, Any] | None = None,
) -> Labelled:
    """The labelled set of positions ``state_id`` (in play, each once) from ``lookups``: per
    objective (``wins``, ``score``) a function of state ids to exact values."""
    from pipeline.games.knucklebones.exact import pairs_of

    state_id = np.asarray(state_id, dtype=np.int64)
    pairs = pairs_of(game.r, state_id)
    dice = game.t.mover_size[pairs].sum(1) + game.t.opp_size[pairs].sum(1)
    nxt = choice_ids(game, state_id)
    out = Labelled(
        game.r.columns, game.r.rows, game.r.faces, state_id, np.asarray(source),
        np.asarray(ply, dtype=np.int16), dice.astype(np.int16), nxt, meta=dict(meta or {}),
    )  # fmt: skip
    legal = nxt >= 0
    for objective, lookup in lookups.items():
        name = FIELDS[objective]
        offset = 1.0 if objective == "wins" else 0.0
        out.values[name] = np.asarray(lookup(state_id), dtype=np.float64)
        succ = np.asarray(lookup(np.where(legal, nxt, 0).ravel()), dtype=np.float64)
        out.choices[name] = np.where(legal, offset - succ.reshape(nxt.shape), np.nan)
    return out


def labelled_set(
    game: Knucklebones,
    lookups: dict[str, Lookup],
    games: int,
    uniform: int,
    seed: int,
    exclude: np.ndarray | None = None,
    only_held_out: bool = False,
) -> Labelled:
    """Positions of ``games`` games between :data:`PLAYERS` and ``uniform`` uniform ones
    (seeded by ``seed``; a position met in play is labelled once, as ``play``), less the state
    ids in ``exclude``, and with ``only_held_out`` only the held-out ones (:func:`held_out`),
    labelled from ``lookups``."""
    state_id, source, ply, meta = positions(game, games, uniform, seed, exclude, only_held_out)
    return label(game, state_id, source, ply, lookups, meta)


def positions(
    game: Knucklebones,
    games: int,
    uniform: int,
    seed: int,
    exclude: np.ndarray | None = None,
    only_held_out: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """The positions :func:`labelled_set` labels, before any value is known: (state ids,
    sources, plies, the record of how they were drawn). The full game's are drawn here, on a
    CPU, and labelled on a GPU (benchmarks/gpu_artefacts.py)."""
    met, plies = play_positions(game, games, seed)
    ids, first = np.unique(met, return_index=True)
    drawn = uniform_positions(game, uniform, seed + 1) if uniform else np.zeros(0, np.int64)
    drawn = drawn[~np.isin(drawn, ids)]
    state_id = np.concatenate([ids, drawn])
    source = np.array(["play"] * len(ids) + ["uniform"] * len(drawn))
    ply = np.concatenate([plies[first], np.full(len(drawn), -1)])
    keep = np.ones(len(state_id), dtype=bool)
    if exclude is not None:
        keep &= ~np.isin(state_id, exclude)
    if only_held_out:
        keep &= held_out(state_id)
    meta = {
        "seed": seed, "games": games, "uniform": uniform,
        "players": [name for name, _, _ in PLAYERS], "held_out": only_held_out,
        "excluded": 0 if exclude is None else len(exclude),
    }  # fmt: skip
    return state_id[keep], source[keep], ply[keep], meta


def bellman_residual(labelled: Labelled, name: str) -> np.ndarray:
    """|value - mean over dice of the best choice| of every position, in objective ``name``
    (``win`` or ``diff``): zero up to the values' tolerance for exact values."""
    f, c = labelled.faces, labelled.columns
    choice = labelled.choices[name].reshape(-1, f, c)
    best = np.nanmax(np.where(np.isnan(choice), -np.inf, choice), axis=2)
    return np.abs(labelled.values[name] - best.mean(axis=1))


#: The tolerance of a labelled set's values when its record names none (the exact solvers').
DEFAULT_TOLERANCE = 1e-11


def bellman_allowance(labelled: Labelled, name: str) -> float:
    """How large :func:`bellman_residual` may be in objective ``name``: the value and the best
    choices are each within the record's ``tolerance`` of the exact ones (twice that), plus,
    in a compact file, half a float32 ulp of each (the largest magnitude's), plus float64
    rounding."""
    tol = float(labelled.meta.get("tolerance", DEFAULT_TOLERANCE))
    scale = max(
        1.0,
        float(np.abs(labelled.values[name]).max(initial=0.0)),
        float(np.nanmax(np.abs(labelled.choices[name]), initial=0.0)),
    )
    rounding = 2.0**-23 * scale if labelled.meta.get("compact") else 0.0
    return 2 * tol + rounding + 1e-12 * scale


# -- files -----------------------------------------------------------------------------------

#: The Parquet metadata key of a labelled set's record (board, seeds, where the values came from).
META_KEY = b"stb.labelled"
#: The float columns of a compact file are stored split into byte streams (Parquet's
#: BYTE_STREAM_SPLIT): a float32's sign and exponent bytes then sit together and compress.
_COMPACT_DTYPE = np.float32


def to_arrow(labelled: Labelled, compact: bool = False) -> Any:
    """The labelled set as an Arrow table: one row per position, its choices as fixed-size
    lists (``faces * columns`` entries, choice ``die_index * columns + j``).

    ``compact``: values and choices as float32 (each within half a float32 ulp of the float64
    value: 3e-8 for a win chance, 4e-6 for a score difference of 100) and no
    ``next_state_id`` column (it follows from the state id: :func:`choice_ids`). The full
    game's 18 choices then cost about 110 bytes a position instead of 450, so that 100,000
    positions fit in one file of a GPU call's 16 MiB."""
    import pyarrow as pa

    width = labelled.faces * labelled.columns
    kind = pa.float32() if compact else pa.float64()

    def fixed(values: np.ndarray, kind: Any) -> Any:
        flat = pa.array(values.reshape(-1), type=kind, from_pandas=True)
        return pa.FixedSizeListArray.from_arrays(flat, width)

    columns = {
        "state_id": pa.array(labelled.state_id, pa.int64()),
        "source": pa.array(labelled.source.astype(str)),
        "ply": pa.array(labelled.ply, pa.int16()),
        "dice": pa.array(labelled.dice, pa.int16()),
    }
    if not compact:
        columns["next_state_id"] = fixed(labelled.next_id, pa.int64())
    for name in labelled.values:
        values, choices = labelled.values[name], labelled.choices[name]
        if compact:
            values, choices = values.astype(_COMPACT_DTYPE), choices.astype(_COMPACT_DTYPE)
        columns[name] = pa.array(values, kind)
        columns[f"choice_{name}"] = fixed(choices, kind)
    record = {
        **labelled.meta, "columns": labelled.columns, "rows": labelled.rows,
        "faces": labelled.faces, "compact": compact,
    }  # fmt: skip
    table = pa.table(columns)
    return table.replace_schema_metadata({META_KEY: json.dumps(record, sort_keys=True)})


def write(labelled: Labelled, path: Path, compact: bool = False) -> None:
    """Write the labelled set to ``path`` (Parquet, zstd), atomically; ``compact``: see
    :func:`to_arrow`."""
    import pyarrow.parquet as pq

    table = to_arrow(labelled, compact)
    options: dict[str, Any] = {"compression": "zstd"}
    if compact:
        floats = [n for n in labelled.values] + [
            f"choice_{n}.list.element" for n in labelled.values
        ]
        options.update(compression_level=9, use_byte_stream_split=floats,
                       use_dictionary=["source"])  # fmt: skip
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp, **options)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read(path: Path) -> Labelled:
    """A labelled set from its Parquet file, compact or not (values as float64 either way;
    a compact file's successor ids are recomputed from the state ids); ValueError when the
    file is not one."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        raise ValueError(f"{path} is not a labelled set (no {META_KEY.decode()} record)")
    record = json.loads(meta[META_KEY])
    c, r, f = int(record["columns"]), int(record["rows"]), int(record["faces"])

    def fixed(name: str) -> np.ndarray:
        col = table[name].combine_chunks()
        return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, f * c)

    state_id = table["state_id"].to_numpy()
    if "next_state_id" in table.column_names:
        nxt = fixed("next_state_id")
    else:  # a compact file: the successors follow from the ids
        from pipeline.games.knucklebones.game import KnuckleRules

        nxt = choice_ids(Knucklebones(KnuckleRules(c, r, f)), state_id)
    out = Labelled(
        c, r, f, state_id, np.asarray(table["source"].to_pylist()), table["ply"].to_numpy(),
        table["dice"].to_numpy(), nxt, meta=record,
    )  # fmt: skip
    for name in FIELDS.values():
        if name in table.column_names:
            out.values[name] = np.asarray(table[name].to_numpy(), dtype=np.float64)
            out.choices[name] = np.asarray(fixed(f"choice_{name}"), dtype=np.float64)
    return out
