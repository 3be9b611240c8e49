"""Which Knucklebones positions are labelled (:mod:`pipeline.games.knucklebones.players.labels`):
the positions people and programs meet, and a uniform sample.

Positions come from two sources:

- ``play``: every position met in games between the project's own players
  (:data:`PLAYERS`: random, greedy, the Rust solver's heuristic and our search at small depths),
  each game's two players drawn at random, dice and draws from one seeded generator, played by
  the player engine (:func:`pipeline.games.knucklebones.players.engine.play`): the positions
  people and programs meet, not the odd corners of the state space;
- ``uniform``: positions drawn uniformly by state id among those still in play.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players import engine
from pipeline.games.knucklebones.players.labels import Labelled, Lookup, held_out, label

#: The players of the ``play`` games (:mod:`pipeline.games.knucklebones.players.engine`).
PLAYERS = ("random", "greedy", "seed-d2", "ours-d1", "ours-d2", "ours-d3")


def play_positions(game: Knucklebones, games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every position met before a roll in ``games`` games between :data:`PLAYERS` (each
    game's two drawn at random, with ``seed``: :func:`engine.play`): (state ids, plies), in the
    order met, repeats included."""
    played = engine.play(game, PLAYERS, games, seed)
    return game.canonical(played.pairs), played.ply


def uniform_positions(game: Knucklebones, n: int, seed: int) -> np.ndarray:
    """``n`` distinct state ids drawn uniformly among the positions in play (fewer when the
    board has fewer)."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

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


def labelled_set(
    game: Knucklebones,
    lookups: dict[str, Lookup],
    games: int,
    uniform: int,
    seed: int,
    only_held_out: bool = False,
) -> Labelled:
    """Positions of ``games`` games between :data:`PLAYERS` and ``uniform`` uniform ones
    (seeded by ``seed``; a position met in play is labelled once, as ``play``), with
    ``only_held_out`` only the held-out ones (:func:`held_out`), labelled from ``lookups``."""
    state_id, source, ply, meta = positions(game, games, uniform, seed, only_held_out)
    return label(game, state_id, source, ply, lookups, meta)


def positions(
    game: Knucklebones, games: int, uniform: int, seed: int, only_held_out: bool = False
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
    keep = held_out(state_id) if only_held_out else np.ones(len(state_id), dtype=bool)
    meta = {
        "seed": seed, "games": games, "uniform": uniform,
        "players": list(PLAYERS), "held_out": only_held_out,
        "excluded": 0,  # the record's field, kept: no position is excluded
    }  # fmt: skip
    return state_id[keep], source[keep], ply[keep], meta


def with_successors(
    game: Knucklebones, state_id: np.ndarray, source: np.ndarray, ply: np.ndarray, roots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The positions with, first, the successors in play of the first ``roots`` held-out ones
    that are not positions already (source ``successor``, ply -1): a set labelled from them
    holds a row for every choice of those roots that does not end the game, so each choice,
    best or not, meets its own row (the full game's GPU-made set, which no CPU solve can check:
    :func:`pipeline.analysis.knucklebones_artefacts.choices_meet_their_rows`). Returns the
    state ids, sources, plies and how many roots there are."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids

    state_id = np.asarray(state_id, dtype=np.int64)
    chosen = state_id[held_out(state_id)][:roots]
    succ = successor_ids(game.r, chosen)
    succ = np.unique(succ[succ >= 0])
    succ = succ[~game.terminal_mask(pairs_of(game.r, succ))]
    succ = succ[~np.isin(succ, state_id)]
    return (
        np.concatenate([succ, state_id]),
        np.concatenate([np.array(["successor"] * len(succ)), np.asarray(source)]).astype(str),
        np.concatenate([np.full(len(succ), -1), np.asarray(ply)]).astype(np.int16),
        len(chosen),
    )
