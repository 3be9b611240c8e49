"""A Knucklebones evaluator learned without exact values: fitted value iteration on searched
targets (`knucklebones self-play`).

The full game's exact values exist only where a GPU solved it; this makes its evaluator on a
CPU from the rules alone. Each round:

1. **Positions.** ``uniform`` positions drawn uniformly by state id among those in play (what
   a position asked at random looks like: mostly late, crowded boards), and every position met
   in ``games`` games between the project's players (:data:`positions.PLAYERS`) and, from the
   second round, the evaluator so far searching one placement deep (``net-d1``), each move
   drawn at random instead with probability ``explore`` (the positions play meets, the
   openings and middle games among them).
2. **Targets.** Each position's value (win chance, and score difference under that play)
   searched ``target_depth`` placements deep by the project's one search
   (:meth:`~pipeline.games.knucklebones.players.search.Searcher.values`) with the evaluator so
   far at its leaves, or the hand-written leaf (``ours``) in the first round: exact where every
   line searched ends the game, and otherwise the expectimax of the last round's estimates,
   ``target_depth`` placements of the game's own rules and dice nearer the truth.
3. **Fit.** The network (:class:`~pipeline.games.knucklebones.players.training.Fitter`),
   warm from the round before, fitted to the targets for ``epochs`` passes.

A round is one application of the game's Bellman operator, ``target_depth`` placements deep,
to the evaluator, then a projection onto the network: the values settle where the searched
value of a position equals the network's own. The end of the game is exact, and each round
carries what is known there ``target_depth`` placements further back, so after ``k`` rounds
the values of positions within about ``k * target_depth`` placements of the end rest on exact
ones. The *residual*, the mean distance between a round's targets and the network's values
of the same positions before it is fitted to them, says how far from that fixed point the
evaluator still is: the rounds stop when it improves by less than ``stop`` of itself, or after
``rounds``.

Why this and not TD(lambda) or expert iteration: a dice game's chance nodes are cheap to
average exactly (six faces), so a searched target has no sampling noise, where a game's
outcome does (a 0/1 result per game); and the positions are drawn, not only played, so the
evaluator learns the crowded late positions a uniform question asks about as well as the ones
play meets. The network is the distilled evaluator's
(:mod:`pipeline.games.knucklebones.players.training`), so the search, the answer and the
packaged files read it as they read a model fitted to exact values.

Reproducible: every draw comes from ``seed`` (positions, games, the fit), the network's matrix
products run on one BLAS thread, and the targets, searched on every core by blocks, do not
depend on the blocks: the same plan gives the same weights on the same numpy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players import engine, positions
from pipeline.games.knucklebones.players.evaluator import Evaluator
from pipeline.games.knucklebones.players.search import NET, OURS, Searcher
from pipeline.games.knucklebones.players.training import DIFF_SCALE, Fitter, Settings, one_thread

#: The method's name in an evaluator's record.
METHOD = "fitted value iteration"
#: The transposition table of each thread's target search (entries: 2 ** TT_BITS).
TT_BITS = 18
#: Positions whose targets one thread searches at a time.
BLOCK = 4096


@dataclass(frozen=True)
class Plan:
    """How an evaluator is learned: every number of the method (see the module's docstring)."""

    rounds: int = 16
    """The most rounds; fewer where the residual stops improving."""
    uniform: int = 75_000
    """Positions drawn uniformly by state id, each round."""
    games: int = 4_000
    """Games whose positions are added, each round."""
    target_depth: int = 2
    """Placements each target is searched ahead."""
    epochs: int = 4
    """Passes over a round's examples."""
    explore: float = 0.1
    """Share of the games' moves drawn at random."""
    stop: float = 0.02
    """Stop when a round's residual is more than ``1 - stop`` times the round's before."""
    seed: int = 0
    settings: Settings = field(default_factory=Settings)

    def record(self) -> dict[str, Any]:
        """The plan as plain data (an evaluator's record keeps it)."""
        out = asdict(self)
        out["settings"] = {**out["settings"], "hidden": list(self.settings.hidden)}
        return out


@dataclass(frozen=True)
class Round:
    """What one round did."""

    round: int
    positions: int
    residual: float
    """Mean |target - the network's value| of the round's positions before its fit (NaN in
    the first round, which has no network yet)."""
    fit_error: float
    """Mean |target - the network's value| over the last pass of the fit."""
    seconds: float


def learn(
    game: Knucklebones,
    plan: Plan,
    report: Callable[[Round], None] | None = None,
) -> tuple[Evaluator, list[Round]]:
    """The evaluator of ``game``'s board learned by ``plan`` (see the module's docstring), and
    what each round did; ``report`` is called after each round."""
    with one_thread():
        fitter = Fitter(game, Settings(**{**asdict(plan.settings), "seed": plan.seed}))
        current: Evaluator | None = None
        done: list[Round] = []
        for k in range(plan.rounds):
            t0 = time.perf_counter()
            pairs = round_positions(game, plan, k, current)
            win, diff = targets(game, pairs, plan.target_depth, current)
            residual = float("nan")
            if current is not None:
                residual = float(np.abs(predict(fitter, pairs)[0] - win).mean())
            err = fitter.fit(pairs, win, diff, plan.epochs)
            current = fitter.net.evaluator({})
            done.append(Round(k, len(pairs), residual, err, time.perf_counter() - t0))
            if report is not None:
                report(done[-1])
            if _settled(done, plan.stop):
                break
    record = {"method": METHOD, "plan": plan.record(), "rounds": [asdict(r) for r in done]}
    return fitter.net.evaluator(record), done


def _settled(done: list[Round], stop: float) -> bool:
    """Whether the last round's residual improved on the round before's by less than
    ``stop`` of it."""
    if len(done) < 3:
        return False
    before, last = done[-2].residual, done[-1].residual
    return bool(last > (1.0 - stop) * before)


def round_positions(
    game: Knucklebones, plan: Plan, k: int, current: Evaluator | None
) -> np.ndarray:
    """[n, columns] the sorted facing pairs of round ``k``'s positions, each once, in play:
    the uniform draw and the positions met in the round's games (their seeds from the plan's
    and the round's)."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    seed = plan.seed * 1_000_003 + 2 * k
    ids = [positions.uniform_positions(game, plan.uniform, seed)] if plan.uniform else []
    players = (*positions.PLAYERS, "net-d1") if current is not None else positions.PLAYERS
    if plan.games:
        met = engine.play(game, players, plan.games, seed + 1, plan.explore, current)
        ids.append(game.canonical(met.pairs))
    found = np.unique(np.concatenate(ids)) if ids else np.zeros(0, np.int64)
    pairs = pairs_of(game.r, found)
    return pairs[~game.terminal_mask(pairs)]


def targets(
    game: Knucklebones, pairs: np.ndarray, depth: int, evaluator: Evaluator | None
) -> tuple[np.ndarray, np.ndarray]:
    """(win, diff) of each position searched ``depth`` placements deep with ``evaluator`` at
    the leaves (None: the hand-written leaf), on every core: one search (and transposition
    table) a thread, over blocks of :data:`BLOCK` positions."""
    from pipeline.solve.threads import spans, threads

    kind = OURS if evaluator is None else NET
    value = np.empty((len(pairs), 2))
    workers = max(1, threads())
    searchers = [Searcher(game, tt_bits=TT_BITS, evaluator=evaluator) for _ in range(workers)]
    blocks = spans(len(pairs), max(1, -(-len(pairs) // BLOCK)))

    def run(who: int) -> None:
        s = searchers[who]
        for lo, hi in blocks[who::workers]:
            found, _ = s.values(pairs[lo:hi], depth, kind)
            value[lo:hi] = found[:, :2]

    if workers == 1:
        run(0)
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="stb-targets") as pool:
            list(pool.map(run, range(workers)))
    return value[:, 0], value[:, 1]


def predict(fitter: Fitter, pairs: np.ndarray, chunk: int = 65_536) -> tuple[np.ndarray, ...]:
    """The network's (win, diff) of each position, in numpy, a chunk at a time."""
    win = np.empty(len(pairs))
    diff = np.empty(len(pairs))
    cnt = fitter.counts(pairs)
    for a in range(0, len(pairs), chunk):
        out, _ = fitter.net.forward(pairs[a : a + chunk], cnt[a : a + chunk])
        win[a : a + chunk] = 1 / (1 + np.exp(-np.clip(out[:, 0], -40, 40)))
        diff[a : a + chunk] = out[:, 1] * DIFF_SCALE
    return win, diff
