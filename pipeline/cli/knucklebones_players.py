"""`stb-pipeline knucklebones label | train | book | rate`: exact values turned into a player
that needs none, measured against exact play (:mod:`pipeline.apps.knucklebones.distill`); and
`self-play`: a board's evaluator learned from the rules alone
(:mod:`pipeline.apps.knucklebones.self_play`), the only way to make the full game's on a CPU."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated

import typer

from pipeline import progress
from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, ForceOutput, LazyConsole, Quiet
from pipeline.errors import TablesMissingError, UsageError
from pipeline.store.outputs import check_output, write_output

#: The commands, which join the `knucklebones` group (:func:`pipeline.cli.knucklebones.register`).
players = typer.Typer()
#: The board option of the `knucklebones` commands whose default board is the full game.
BoardVariant = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        help="A Knucklebones board and die, e.g. knucklebones-2x2 (default: the full game).",
    ),
]
#: Largest --games per pair (a day of depth-1 games) and --seed (the seeds must fit int64).
MAX_GAMES = 10_000_000
MAX_SEED = 2**62

out = LazyConsole(highlight=False, soft_wrap=True)

#: The board `label`, `train` and `rate` work on when none is named: the largest board whose
#: exact values a laptop can solve in minutes.
DEFAULT_BOARD = "knucklebones-3x3-d4"

Seed = Annotated[int, typer.Option(help="Seed of the games, the sample and the fit.")]
Uniform = Annotated[int, typer.Option(help="Positions drawn uniformly by state id.")]
Games = Annotated[
    int, typer.Option(help="Games between the project's players whose positions are labelled.")
]


#: The board option of `label`, `train`, `book` and `rate` (whose default is not the full game's).
TrainingBoard = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        help=f"A Knucklebones board and die, e.g. knucklebones-3x2 (default: {DEFAULT_BOARD}).",
    ),
]
#: The -o of `train` and `self-play`, the two commands that make an evaluator.
WeightsOutput = Annotated[Path, typer.Option("--output", "-o", help="The weights file (.npz).")]
Leaves = Annotated[
    int,
    typer.Option(
        help="How far a close call goes deeper: as far as its search meets about this many "
        "leaves (the player net-dDEPTH+DEEPER/LEAVES; 0: no bound).",
    ),
]


def within(option: str, value: float, low: float, high: float) -> None:
    """UsageError, in the option's words, unless ``low <= value <= high``."""
    if not low <= value <= high:
        raise UsageError(f"{option} must be between {low:,} and {high:,}, not {value}")


def check_close(depth: int, deeper: int, leaves: int) -> None:
    """UsageError unless --depth, --deeper and --leaves name a player (:func:`_players`)."""
    from pipeline.apps.knucklebones.position import check_depth
    from pipeline.games.knucklebones import DEEPEST
    from pipeline.games.knucklebones.players.engine import MOST_LEAVES

    check_depth(depth)
    if deeper and not depth < deeper <= DEEPEST:
        raise UsageError(f"--deeper must be 0 or {depth + 1} to {DEEPEST}, not {deeper}")
    within("--leaves", leaves, 0, MOST_LEAVES)
    if leaves and not deeper:
        raise UsageError("--leaves bounds how deep a close call goes: give --deeper too")


def _rules(variant: str | None) -> object:
    """The KnuckleRules of a Knucklebones variant's board (UsageError for other games, and for
    an empty name: a mistake, not the default board)."""
    from pipeline.apps.knucklebones.position import board_variant

    if variant is not None and not variant.strip():
        raise UsageError(f"--variant {variant!r}: give a board's name (or leave --variant out)")
    found = board_variant(variant or DEFAULT_BOARD)
    return found.board().game.r  # type: ignore[misc]


def _check(seed: int, games: int) -> None:
    within("--seed", seed, 0, MAX_SEED)
    within("--games", games, 1, 1_000_000)


def _data(data_dir: Path, tables: bool) -> Path | None:
    return Path(data_dir) if tables else None


Tables = Annotated[
    bool,
    typer.Option(
        "--tables/--solve",
        help="Read the board's exact values from its tables in --data-dir where both "
        "objectives are built (else they are solved here), or always solve.",
    ),
]


LabelledFile = Annotated[
    Path | None,
    typer.Option(
        "--labelled",
        help="A labelled set (`knucklebones label`) instead of positions labelled here: `train` "
        "fits to it less its held-out tenth, and both rate on that tenth (the full game's "
        "GPU-made set is read from the package where present).",
    ),
]
DecisionsFile = Annotated[
    Path | None,
    typer.Option(
        "--decisions-file",
        help="Exact decisions to rate on, every one (a JSON file as the full game's packaged "
        "3x3-d6-decisions.json, which the full game reads unless told; a smaller board rates "
        "on held-out labelled positions).",
    ),
]
EvaluatorFile = Annotated[
    Path | None,
    typer.Option(
        "--evaluator",
        help="The evaluator the net players read (a `train` or `self-play` weights file; "
        "default: the board's packaged one).",
    ),
]
Players = Annotated[
    str | None,
    typer.Option(
        help="Players, comma-separated: greedy, seed-dN, ours-dN, net-dN (default: greedy, "
        "seed-d4, ours-d2, ours-d4, and where the board has an evaluator net-d2, net-d4 and the "
        "player it was rated as; +M: close calls searched M deep, +M/L: as far as L leaves).",
    ),
]
Write = Annotated[
    bool | None,
    typer.Option(
        "--write/--no-write",
        help="Store the ratings as benchmarks rows of the variant in --data-dir, where it is "
        "built (`query knucklebones_players` reads them); default: where it is built.",
        show_default=False,
    ),
]


@players.command("label")
def label_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="The Parquet file to write.")],
    variant: TrainingBoard = None,
    games: Games = 2000,
    uniform: Uniform = 10000,
    seed: Seed = 1,
    held_out: Annotated[
        bool, typer.Option("--held-out", help="Only the held-out positions (a tenth, by id).")
    ] = False,
    tables: Tables = True,
    force: ForceOutput = False,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Write labelled positions: each with its exact value and every (die, column) choice's, in
    both objectives, from games between the project's players and a uniform sample.

    Example: stb-pipeline knucklebones label -v knucklebones-3x2 --games 1000 -o labelled.parquet
    """
    from pipeline.analysis.knucklebones_artefacts import bellman_residual
    from pipeline.apps.knucklebones.distill import label
    from pipeline.games.knucklebones.players import artefacts

    _check(seed, games)
    within("--uniform", uniform, 0, 10_000_000)
    rules = _rules(variant)
    check_output(output, data_dir, force)
    found = label(rules, _data(data_dir, tables), games, uniform, seed, held_out)  # type: ignore[arg-type]
    write_output(output, artefacts.labelled_writer(found))
    worst = max(float(bellman_residual(found, n).max(initial=0.0)) for n in found.values)
    out.print(
        f"{len(found):,} positions written to {output} (values: {found.meta['values']}; "
        f"largest Bellman residual among them {worst:.2g})"
    )


@players.command("train")
def train_cmd(
    output: WeightsOutput,
    variant: TrainingBoard = None,
    games: Games = 40000,
    uniform: Uniform = 300000,
    seed: Seed = 0,
    epochs: Annotated[int, typer.Option(help="Passes over the examples.")] = 6,
    depth: Annotated[int, typer.Option(help="The new player's search depth.")] = 4,
    deeper: Annotated[
        int,
        typer.Option(
            help="How deep it searches a close call (its best two columns within 0.005 of "
            "win chance); 0: never deeper than --depth.",
        ),
    ] = 6,
    leaves: Leaves = 0,
    decisions: Annotated[int, typer.Option(help="Held-out decisions it is rated on.")] = 3000,
    labelled: LabelledFile = None,
    tables: Tables = True,
    force: ForceOutput = False,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Fit the distilled evaluator of a board to its exact values and rate it on held-out
    positions against the depth-4 search; write its weights and record.

    Example: stb-pipeline knucklebones train -v knucklebones-3x2 --games 20000 -o 3x2-d6.npz
    """
    from pipeline.apps.knucklebones.distill import labelled_file, train
    from pipeline.games.knucklebones.players.artefacts import evaluator_writer
    from pipeline.games.knucklebones.players.training import Settings

    _check(seed, games)
    check_close(depth, deeper, leaves)
    within("--epochs", epochs, 1, 100)
    within("--decisions", decisions, 10, 1_000_000)
    if labelled is not None and not labelled.is_file():
        raise UsageError(f"--labelled {labelled}: no such file")
    rules = _rules(variant)
    check_output(output, data_dir, force)
    found = train(
        rules, _data(data_dir, tables), games, uniform, seed,  # type: ignore[arg-type]
        Settings(epochs=epochs, seed=seed), depth, decisions,
        labelled=labelled_file(rules, labelled),  # type: ignore[arg-type]
        deeper=deeper, leaves=leaves,
    )  # fmt: skip
    write_output(output, evaluator_writer(found.evaluator))
    out.print(_ratings_table(found.ratings))
    verdict = "beats" if found.evaluator.trusted else "does not beat"
    out.print(
        f"weights written to {output}: {found.ratings[0].player} {verdict} the search on every "
        "measure "
        f"({found.seconds:.0f} s)"
    )


@players.command("book")
def book_cmd(
    output: Annotated[Path, typer.Option("--output", "-o", help="The book file to write (.npz).")],
    variant: TrainingBoard = None,
    plies: Annotated[int, typer.Option(help="Placements from the start the book holds.")] = 6,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="Values as float32 (within 3e-8 of the exact win chance; a third of the "
            "bytes): what the full game's book needs to fit a GPU call's file limit.",
        ),
    ] = False,
    tables: Tables = True,
    force: ForceOutput = False,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Write a board's opening book: every position within --plies placements of the start with
    its exact values in both objectives (the answer reads a packaged book before it searches).

    Example: stb-pipeline knucklebones book -v knucklebones-3x2 --plies 5 -o 3x2-d6-book.npz
    """
    from pipeline.apps.knucklebones.distill import exact_values
    from pipeline.games.knucklebones.game import board_game
    from pipeline.games.knucklebones.players.artefacts import book_writer
    from pipeline.games.knucklebones.players.book import make

    within("--plies", plies, 0, 12)
    t0 = time.perf_counter()
    rules = _rules(variant)
    check_output(output, data_dir, force)
    game = board_game(rules)  # type: ignore[arg-type]
    values = exact_values(rules, _data(data_dir, tables))  # type: ignore[arg-type]
    with progress.task(f"the positions within {plies} placements"):
        found = make(game, values.lookups(), plies, {})
    found.meta.update(values.provenance(t0))
    write_output(output, book_writer(found, compact))
    out.print(
        f"{len(found):,} positions within {plies} placements written to {output} "
        f"(values: {values.source}; start value {found.win[0]:.12f})"
    )


@players.command("rate")
def rate_cmd(
    variant: TrainingBoard = None,
    players: Players = None,
    decisions: Annotated[int, typer.Option(help="Held-out decisions drawn.")] = 2000,
    games: Games = 3000,
    seed: Seed = 7,
    labelled: LabelledFile = None,
    decisions_file: DecisionsFile = None,
    evaluator: EvaluatorFile = None,
    tables: Tables = True,
    write: Write = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Rate players against exact play, choice by choice, on held-out positions met in play
    (the full game: on its packaged file of exact decisions): share of exactly optimal choices
    (overall, middle game), regret, milliseconds a move.

    Example: stb-pipeline knucklebones rate -v knucklebones-3x2 --players greedy,ours-d4,net-d3
    """
    from pipeline.apps.knucklebones.distill import held_out_positions
    from pipeline.apps.knucklebones.rating import METHOD, rate_all, write_rows
    from pipeline.apps.knucklebones.rating import decisions as held_decisions
    from pipeline.apps.knucklebones.self_play import held_decisions as file_decisions
    from pipeline.games.knucklebones.game import board_game
    from pipeline.games.knucklebones.players import artefacts

    _check(seed, games)
    within("--decisions", decisions, 10, 1_000_000)
    for option, given in (("--labelled", labelled), ("--decisions-file", decisions_file),
                          ("--evaluator", evaluator)):  # fmt: skip
        if given is not None and not given.is_file():
            what = "not a regular file" if given.exists() else "no such file"
            raise UsageError(f"{option} {given}: {what}")
    if labelled is not None and decisions_file is not None:
        raise UsageError("--labelled and --decisions-file: name one set of decisions")
    rules = _rules(variant)
    name = variant or DEFAULT_BOARD
    asked_write, write = write, _where_rows_go(data_dir, name, write)  # before the rating
    game = board_game(rules)  # type: ignore[arg-type]
    # checked before use, and to be of the board (ArtefactError: one line naming the file)
    model = None if evaluator is None else artefacts.read_evaluator(evaluator, rules)  # type: ignore[arg-type]
    made = _players(game, players, model)
    packaged = artefacts.decisions_path(rules)  # type: ignore[arg-type]
    if labelled is None and (decisions_file is not None or packaged.exists()):
        asked, drawn = file_decisions(rules, None, decisions_file, decisions, seed)  # type: ignore[arg-type]
        values = "exact, from the file"
    else:
        held = held_out_positions(rules, _data(data_dir, tables), games, seed, labelled)  # type: ignore[arg-type]
        asked = held_decisions(game, held, decisions, seed + 1)
        drawn = f"{labelled}" if labelled else f"{games:,} games between the project's players"
        values = held.meta["values"]
    ratings = rate_all(made, asked, seed + 2)
    out.print(_ratings_table(ratings))
    out.print(f"{len(asked):,} held-out decisions from {drawn} (seed {seed}); values: "
              f"{values}")  # fmt: skip
    if write:
        path = write_rows(data_dir, name, game.rules(), ratings, {"games": games, "seed": seed})
        out.print(f"rows written to {path} (variant {name}, method '{METHOD}')")
    elif asked_write is None:  # not asked either way: say why nothing was stored
        out.print(f"rows not stored: {name} is not built in {data_dir} (--write needs it)")


def _where_rows_go(data_dir: Path, name: str, write: bool | None) -> bool:
    """Whether `rate` stores its rows: only where ``name`` is built in ``data_dir`` (rows of a
    board not built there would be read by no query: `query knucklebones_players` says "not
    built"); ``--write`` asked there is refused before any rating, ``--no-write`` never."""
    if write is False:
        return False
    from pipeline.store import directory

    entries = directory.of(data_dir).snapshot().entries if data_dir.is_dir() else {}
    entry = entries.get(name)
    if entry is None or not entry.built:
        if write:
            raise TablesMissingError(
                f"--write: {name} is not built in {data_dir}, so no query would read its rows: "
                f"build it (stb-pipeline build --variant {name} --data-dir {data_dir}) or rate "
                "with --no-write"
            )
        return False
    from pipeline.store.tables import ensure_writable

    ensure_writable(data_dir)
    return True


def _players(game: object, names: str | None, model: object = None) -> dict:
    """The players named in ``--players`` (comma-separated), made for ``game``'s board, the
    ``net`` ones reading ``model`` (None: the board's packaged evaluator); UsageError for an
    unknown name or a net player on a board without an evaluator. None names `rate`'s usual
    players: the distilled ones only where the board has an evaluator (``model``, or its
    packaged one), and its record's player among them (the board's default: ``net-d4+6`` on
    the small boards, ``net-d3+5/12000`` on the full game)."""
    from pipeline.apps.knucklebones.match import player_names
    from pipeline.games.knucklebones.players.engine import Player, board_evaluator
    from pipeline.games.knucklebones.players.names import player_name

    if names is None:
        names = "greedy,seed-d4,ours-d2,ours-d4"
        found = model if model is not None else board_evaluator(game)  # type: ignore[arg-type]
        if found is not None:
            meta = found.meta  # type: ignore[union-attr]
            recorded = player_name(
                "net", int(meta.get("depth") or 4), meta.get("deeper"), meta.get("leaves")
            )
            names = ",".join(dict.fromkeys([*names.split(","), "net-d2", "net-d4", recorded]))
    return {name: Player(game, name, model) for name in player_names(names, "--players")}  # type: ignore[arg-type]


def _ratings_table(ratings: list) -> object:
    from rich.table import Table

    table = Table(
        "player", "optimal", "middle game", "mean regret", "worst regret", "points lost",
        "ms a move",
    )  # fmt: skip
    for r in ratings:
        table.add_row(
            r.player, f"{r.optimal:.4f}", f"{r.optimal_middle:.4f}", f"{r.mean_regret:.6f}",
            f"{r.max_regret:.4f}", f"{r.mean_points_lost:.3f}", f"{r.ms_per_move:.2f}",
        )  # fmt: skip
    return table


@players.command("self-play")
def self_play_cmd(
    output: WeightsOutput,
    variant: BoardVariant = None,
    rounds: Annotated[int, typer.Option(help="The most rounds of fitted value iteration.")] = 16,
    uniform: Annotated[
        int, typer.Option(help="Positions drawn uniformly by state id, each round.")
    ] = 75_000,
    games: Annotated[
        int, typer.Option(help="Games whose positions join each round (the project's players).")
    ] = 4_000,
    target_depth: Annotated[
        int, typer.Option(help="Placements each round's targets are searched ahead.")
    ] = 2,
    epochs: Annotated[int, typer.Option(help="Passes over each round's examples.")] = 4,
    explore: Annotated[
        float, typer.Option(help="Share of the games' moves drawn at random.")
    ] = 0.1,
    seed: Annotated[int, typer.Option(help="Seed of the positions, the games and the fit.")] = 0,
    depth: Annotated[int, typer.Option(help="The new player's search depth.")] = 4,
    deeper: Annotated[
        int, typer.Option(help="How deep it searches a close call; 0: never deeper than --depth.")
    ] = 0,
    leaves: Leaves = 0,
    decisions: Annotated[
        int, typer.Option(help="Held-out decisions it is rated on (a board without a file).")
    ] = 3000,
    decisions_file: DecisionsFile = None,
    force: ForceOutput = False,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Learn a board's evaluator from the rules alone by fitted value iteration (positions
    from play and a uniform draw, targets searched with the evaluator so far, a refit, round
    after round), then rate its player against exact play; write its weights and record.

    Example: stb-pipeline knucklebones self-play -v knucklebones -o 3x3-d6.npz
    """
    from pipeline.apps.knucklebones.position import FULL_GAME, board_variant
    from pipeline.apps.knucklebones.self_play import self_play
    from pipeline.games.knucklebones.players.artefacts import evaluator_writer
    from pipeline.games.knucklebones.players.fitted import Plan

    within("--rounds", rounds, 1, 200)
    within("--uniform", uniform, 0, 10_000_000)
    within("--games", games, 0, 1_000_000)
    if uniform + games == 0:
        raise UsageError("--uniform and --games are both 0: a round would have no positions")
    within("--target-depth", target_depth, 1, 4)
    within("--epochs", epochs, 1, 100)
    within("--explore", explore, 0.0, 0.99)
    within("--seed", seed, 0, MAX_SEED)
    check_close(depth, deeper, leaves)
    within("--decisions", decisions, 10, 1_000_000)
    if decisions_file is not None and not decisions_file.is_file():
        raise UsageError(f"--decisions-file {decisions_file}: no such file")
    check_output(output, Path(data_dir), force)
    rules = board_variant(variant).board().game.r  # type: ignore[misc]
    plan = Plan(rounds, uniform, games, target_depth, epochs, explore, seed=seed)
    # the command that makes these weights again: every number of the plan, the file's name
    command = shlex.join([
        "stb-pipeline", "knucklebones", "self-play", "-v", variant or FULL_GAME,
        "--rounds", str(rounds), "--uniform", str(uniform), "--games", str(games),
        "--target-depth", str(target_depth), "--epochs", str(epochs), "--explore", str(explore),
        "--seed", str(seed), "--depth", str(depth), "--deeper", str(deeper),
        "--leaves", str(leaves), "-o", output.name,
    ])  # fmt: skip
    found = self_play(
        rules, plan, depth, deeper, Path(data_dir), decisions, decisions_file, command, leaves
    )
    write_output(output, evaluator_writer(found.evaluator))
    out.print(_ratings_table(found.ratings))
    verdict = "beats" if found.evaluator.trusted else "does not beat"
    last = found.rounds[-1]
    out.print(
        f"weights written to {output} after {len(found.rounds)} rounds (residual "
        f"{last.residual:.4f}); {found.ratings[0].player} {verdict} {found.ratings[1].player} "
        f"on every measure of win chance, on {found.decisions} ({found.seconds:.0f} s)"
    )
