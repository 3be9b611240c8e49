"""`stb-pipeline knucklebones self-play`: a board's evaluator learned from the rules alone
(:mod:`pipeline.apps.knucklebones.self_play`), the only way to make the full game's on a CPU."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.knucklebones_args import MAX_SEED, BoardVariant, out, within
from pipeline.cli.knucklebones_players import DecisionsFile, Leaves, WeightsOutput, check_close
from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, ForceOutput, Quiet
from pipeline.errors import UsageError
from pipeline.store.outputs import check_output

#: The command, which joins the `knucklebones` group (:func:`pipeline.cli.knucklebones.register`).
learning = typer.Typer()


@learning.command("self-play")
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
    from pipeline.cli.knucklebones_players import _ratings_table, _write
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
    _write(output, evaluator_writer(found.evaluator))
    out.print(_ratings_table(found.ratings))
    verdict = "beats" if found.evaluator.trusted else "does not beat"
    last = found.rounds[-1]
    out.print(
        f"weights written to {output} after {len(found.rounds)} rounds (residual "
        f"{last.residual:.4f}); {found.ratings[0].player} {verdict} {found.ratings[1].player} "
        f"on every measure of win chance, on {found.decisions} ({found.seconds:.0f} s)"
    )
