"""From exact values to a Knucklebones player that needs none: labelled positions, the distilled
evaluator fitted to them, and players measured against exact play on held-out positions
(`knucklebones label`, `knucklebones train`, `knucklebones rate`).

The exact values of a board come from its tables where both objectives are built in the data
directory (found by the rules they record, whatever their names), else from a solve here
(:func:`pipeline.games.knucklebones.exact.solver.solve`, every value within 1e-11): the small boards
(3x2, 3x3 with a d4) solve in a minute or two on a laptop. The full game's values exist only on
a GPU; its labelled set and book come from there (docs/knucklebones-full-game.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline import progress
from pipeline.errors import ArtefactError, UsageError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules, board_game
from pipeline.games.knucklebones.players.evaluator import Evaluator
from pipeline.games.knucklebones.players.labels import Labelled, Lookup
from pipeline.games.knucklebones.players.names import player_name, player_record
from pipeline.games.knucklebones.players.positions import labelled_set
from pipeline.games.knucklebones.players.training import Settings, examples, fit

#: The largest board whose values are held in memory (and solved here when not built): 3x3
#: with a d5 has 351 million positions; the full game 4.8 billion.
MAX_STATES = 400_000_000
#: The players a new evaluator must beat on every measure to become its board's default:
#: the search the answer used before it.
BASELINE = "ours-d4"
#: How far from exact the values may be: the solver's bound here, and the bound a built
#: table's value iteration stopped within (1e-13 or better on the boards held in memory).
TOLERANCE = 1e-11


@dataclass(frozen=True)
class Values:
    """Both objectives' exact values of a board, by state id, and where they came from."""

    values: dict[str, np.ndarray]
    source: str
    """``tables: NAME, NAME`` or ``solved here: every value within 1e-11``."""
    seconds: float = 0.0
    """How long reading or solving them took."""

    def lookups(self) -> dict[str, Lookup]:
        """Each objective's values as a lookup of state ids."""
        return {k: v.__getitem__ for k, v in self.values.items()}

    def provenance(self, since: float) -> dict[str, Any]:
        """The record of an artefact made from these values (:func:`provenance`)."""
        return provenance(self.source, TOLERANCE, since)


def provenance(source: str, tolerance: float, since: float) -> dict[str, Any]:
    """The record an artefact made here keeps (the keys `check-artefacts` asks for): where it
    was made, by which code, in how many seconds since ``since`` (a :func:`time.perf_counter`
    reading), where its exact values came from and how far from exact they may be."""
    import platform

    from pipeline.store.manifest import code_hash

    return {
        "device": f"CPU ({platform.machine()}, {platform.system()})",
        "code_hash": code_hash(),
        "seconds": round(time.perf_counter() - since, 1),
        "tolerance": tolerance,
        "values": source,
    }


def exact_values(rules: KnuckleRules, data_dir: Path | None) -> Values:
    """Both objectives' exact values of ``rules``' board: from its tables in ``data_dir``
    where both are built, else solved here; UsageError for a board too big for memory."""
    game = board_game(rules)
    if game.n_states > MAX_STATES:
        raise UsageError(
            f"the {rules.columns}x{rules.rows} board with a d{rules.faces} has "
            f"{game.n_states:,} positions: its exact values exist only on a GPU (label it "
            "there: docs/knucklebones-full-game.md)"
        )
    t0 = time.perf_counter()
    found = _built(game, data_dir) if data_dir is not None else None
    if found is not None:
        return Values(found.values, found.source, time.perf_counter() - t0)
    from pipeline.games.knucklebones.exact.solver import solve

    out: dict[str, np.ndarray] = {}
    for objective in ("wins", "score"):
        board = KnuckleRules(rules.columns, rules.rows, rules.faces, objective)
        with progress.task(f"solving the board exactly ({objective})"):
            out[objective] = solve(board, tol=TOLERANCE).values()
    return Values(out, f"solved here: every value within {TOLERANCE:g}", time.perf_counter() - t0)


def _built(game: Knucklebones, data_dir: Path) -> Values | None:
    """Both objectives' values from the board's built tables (None unless both are built)."""
    from pipeline.answer.answers import for_dir
    from pipeline.apps.knucklebones.known import built
    from pipeline.store import readers

    if not (Path(data_dir) / "manifest.json").exists():
        return None
    variant, twin = built(for_dir(data_dir), game.r)
    if variant is None or twin is None:
        return None
    own = variant.name
    out: dict[str, np.ndarray] = {}
    for objective, name in (("wins", own), ("score", twin)):
        with progress.task(f"reading {name}'s values"):
            table = readers.dataset(data_dir, "states", name).to_table(
                columns=["state_id", "value"]
            )
        values = np.full(game.n_states, np.nan)
        values[table["state_id"].to_numpy()] = table["value"].to_numpy()
        if np.isnan(values).any():
            raise UsageError(f"{name}'s states table lacks positions: rebuild it")
        out[objective] = values
    return Values(out, f"tables: {own}, {twin}")


def label(
    rules: KnuckleRules, data_dir: Path | None, games: int, uniform: int, seed: int,
    held_out: bool = False,
) -> Labelled:  # fmt: skip
    """A labelled set of ``rules``' board (see :func:`positions.labelled_set`)."""
    t0 = time.perf_counter()
    game = board_game(rules)
    values = exact_values(rules, data_dir)
    with progress.task(f"labelling: {games:,} games and {uniform:,} uniform positions"):
        out = labelled_set(game, values.lookups(), games, uniform, seed, only_held_out=held_out)
    out.meta.update(values.provenance(t0))
    return out


def held_out_positions(
    rules: KnuckleRules, data_dir: Path | None, games: int, seed: int, path: Path | None = None
) -> Labelled:
    """Held-out labelled positions of ``rules``' board to rate players on: the held-out ones of
    the labelled set in ``path``; else, for a board too big to solve here (the full game), the
    packaged set its GPU call made (`models/<board>-labelled.parquet`) where present; else
    positions from ``games`` games (``seed``) labelled here. UsageError for a file that is not
    a labelled set of this board, or holds no held-out position."""
    from pipeline.games.knucklebones.players import labels

    path = labelled_file(rules, path)
    if path is None:
        return label(rules, data_dir, games, 0, seed, held_out=True)
    kept = read_labelled(rules, path)
    kept = kept.subset(labels.held_out(kept.state_id))
    if not len(kept):
        raise UsageError(f"{path} holds no held-out position (a tenth of the ids, by hash)")
    return kept


def labelled_file(rules: KnuckleRules, path: Path | None) -> Path | None:
    """``path``, else for a board too big to solve here (the full game) the packaged labelled
    set its GPU call made (`models/<board>-labelled.parquet`) where present, else None."""
    from pipeline.games.knucklebones.players import artefacts

    if path is None and board_game(rules).n_states > MAX_STATES:
        packaged = artefacts.path("labelled", rules)
        return packaged if packaged.exists() else None
    return path


def read_labelled(rules: KnuckleRules, path: Path) -> Labelled:
    """The labelled set in ``path`` (`knucklebones label`, or the full game's GPU call), its
    ``values`` record naming the file; UsageError (the user named it) for a file that is not
    a labelled set of ``rules``' board, or holds a value no exact solve gives
    (:func:`pipeline.games.knucklebones.players.artefacts.read_labelled` checks every column)."""
    from pipeline.games.knucklebones.players import artefacts

    try:
        found = artefacts.read_labelled(path, rules)
    except ArtefactError as exc:
        raise UsageError(str(exc)) from None
    made = found.meta.get("values") or found.meta.get("device", "")
    found.meta["values"] = f"{Path(path).name}" + (f" ({made})" if made else "")
    return found


@dataclass(frozen=True)
class Trained:
    """An evaluator fitted here, and how it was made and measured."""

    evaluator: Evaluator
    ratings: list[Any]
    seconds: float


@dataclass(frozen=True)
class TrainingSet:
    """Positions to fit to and held-out positions to rate on, and where their values came from."""

    fit: Labelled
    held: Labelled
    source: str
    tolerance: float
    games: int
    uniform: int


def training_set(
    rules: KnuckleRules, data_dir: Path | None, games: int, uniform: int, seed: int,
    labelled: Path | None = None,
) -> TrainingSet:  # fmt: skip
    """Labelled positions of ``rules``' board from ``games`` games and ``uniform`` uniform
    positions (``seed``), and held-out ones from a tenth as many games (``seed + 1``); or, from
    the file ``labelled``, its positions (the fit leaves the held-out tenth out) and its
    held-out tenth. UsageError where there is no held-out position to rate on."""
    from pipeline.games.knucklebones.players.labels import held_out

    game = board_game(rules)
    if labelled is None:
        values = exact_values(rules, data_dir)
        with progress.task(f"labelling: {games:,} games and {uniform:,} uniform positions"):
            found = labelled_set(game, values.lookups(), games, uniform, seed)
            held = labelled_set(game, values.lookups(), max(games // 10, 200), 0, seed + 1,
                                only_held_out=True)  # fmt: skip
        return TrainingSet(found, held, values.source, TOLERANCE, games, uniform)
    found = read_labelled(rules, labelled)
    held = found.subset(held_out(found.state_id))
    if not len(held):
        raise UsageError(f"{labelled} holds no held-out position to rate the model on")
    return TrainingSet(
        found, held, found.meta["values"], float(found.meta.get("tolerance", TOLERANCE)),
        int(found.meta.get("games", 0)), int(found.meta.get("uniform", 0)),
    )  # fmt: skip


def train(
    rules: KnuckleRules,
    data_dir: Path | None,
    games: int,
    uniform: int,
    seed: int,
    settings: Settings,
    depth: int,
    decisions: int,
    labelled: Path | None = None,
    deeper: int = 0,
    leaves: int = 0,
) -> Trained:
    """Fit an evaluator of ``rules``' board to a labelled set (:func:`training_set`), then
    measure its player (``net-d{depth}``, or ``net-d{depth}+{deeper}``: close calls ``deeper``
    deep, ``/{leaves}``: as far as that many leaves) and :data:`BASELINE` on ``decisions``
    held-out decisions; the record (``meta``) names the training data, the settings and the
    measures, and says whether the model's player beat the baseline on every one (it becomes
    the board's default player then)."""
    from pipeline.apps.knucklebones.rating import beats, rate_all
    from pipeline.apps.knucklebones.rating import decisions as held_decisions
    from pipeline.games.knucklebones.players.engine import Player

    t0 = time.perf_counter()
    game = board_game(rules)
    data = training_set(rules, data_dir, games, uniform, seed, labelled)
    n_examples = len(examples(data.fit)[0])
    with progress.task(f"fitting the evaluator to {n_examples:,} examples", total=settings.epochs,
                       unit="epochs") as job:  # fmt: skip
        model = fit(game, data.fit, settings, report=lambda k, err: job.advance(1))
    asked = held_decisions(game, data.held, decisions, seed + 2)
    name = player_name("net", depth, deeper, leaves)
    made = {name: Player(game, name, model), BASELINE: Player(game, BASELINE)}
    ratings = rate_all(made, asked, seed + 3)
    model.meta.update({
        **player_record(depth, deeper, leaves), "board": model.board,
        "beats_search": beats(*ratings),
        "training": {
            "values": data.source, "games": data.games, "uniform": data.uniform, "seed": seed,
            "positions": len(data.fit), "examples": n_examples,
            "players": data.fit.meta.get("players", []),
        },
        "held_out": {"decisions": len(asked), "seed": seed + 1, "every": 10},
        "ratings": [r.row() for r in ratings],
        **provenance(data.source, data.tolerance, t0),
    })  # fmt: skip
    return Trained(model, ratings, time.perf_counter() - t0)
