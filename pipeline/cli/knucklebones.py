"""`stb-pipeline knucklebones ...`: the full 3x3 game by search (solve, tree, play, benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipeline import progress
from pipeline.apps.knucklebones import OPPONENTS
from pipeline.cli.knucklebones_players import (
    MAX_GAMES,
    MAX_SEED,
    BoardVariant,
    out,
    players,
    within,
)
from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, Quiet
from pipeline.errors import UsageError
from pipeline.games.knucklebones import DEEPEST

if TYPE_CHECKING:
    import polars as pl
    from rich.tree import Tree

    from pipeline.answer.model import BoardAnswer
    from pipeline.apps.knucklebones.position import Shown, TreeNode

BOARD_HELP = (
    "A board column by column: columns separated by '/', each column its dice as digits "
    "(any order); '_' is an empty slot and '_' or nothing an empty column. E.g. 44_/1__/___ "
    "or 44/1/_. Or the Rust solver's form, one line per row ('_' an empty square), lines "
    "separated by "
    'a newline or the two characters \\n: "41_\\n4__\\n___" is the same board.'
)
Board1 = Annotated[str, typer.Argument(help="The board of the player to move. " + BOARD_HELP)]
Board2 = Annotated[str, typer.Argument(help="The opponent's board, same format.")]
Die = Annotated[int, typer.Argument(help="The die just rolled (1..6).")]
DEPTH_HELP = (
    f"Placements searched where no table or book answers (1..{DEEPEST}; default: the board's "
    "player's: its distilled evaluator's depth, else 3)."
)

kb = typer.Typer(
    help="Knucklebones (the full game: 3 columns of 3, six-sided die; a smaller board with "
    "--variant): exact answers from the solved tables where they are built, else a "
    "depth-limited expectimax search; the exact solve itself, its checks and benchmarks.\n\n"
    "Boards are written column by column: 44_/1__/___ is a column 4,4, a column 1 and an empty "
    "column. BOARD1 is the player about to place DIE, BOARD2 the opponent; column i of BOARD1 "
    "faces column i of BOARD2. The Rust solver's boards, one line per row with '_' for an empty "
    "square "
    "(41_\\n4__\\n___ is the same board), are read too.\n\n"
    "Example: stb-pipeline knucklebones solve 44/1/_ 2/_/_ 4",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _kind(exact: bool, looked_up: str) -> str:
    """How exact a value is: from the tables, the opening book, searched to the end (exact)
    or estimated (said inside parentheses: never "(exact (book))")."""
    looked = {"tables": "exact, from tables", "book": "exact, from the book"}.get(looked_up)
    return looked or ("exact" if exact else "estimate")


def _source(a: BoardAnswer) -> str:
    """Where an answer's values come from, in words."""
    if a.source == "tables":
        return "exact (from tables)"
    if a.source == "book":
        return "exact: yes (book)"
    if a.source == "end":
        return f"exact: yes (searched to the end, depth {a.depth})"
    return f"estimate ({a.player}, searched {a.depth} placements deep)"


def _num(value: float | None, spec: str) -> str:
    """A value as the tables give it, or ``-`` where its objective is not built."""
    return "-" if value is None else format(value, spec)


def _fmt(value: Shown) -> str:
    return (
        f"win {_num(value.win, '.4f')}  score difference {_num(value.diff, '+.3f')}  "
        f"({_kind(value.exact, value.looked_up)})"
    )


@kb.command("solve")
def solve_cmd(
    board1: Board1,
    board2: Board2,
    die: Die,
    depth: Annotated[int | None, typer.Option(help=DEPTH_HELP)] = None,
    variant: BoardVariant = None,
    use_tables: Annotated[
        bool,
        typer.Option(
            "--tables/--no-tables",
            help="Look up positions of a board solved in --data-dir (both objectives built).",
        ),
    ] = True,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Print the best column for the die and its win probability and expected score difference.

    Example: stb-pipeline knucklebones solve 44_/1__/___ 2__/___/___ 4 --depth 4
    """
    from rich.table import Table

    from pipeline.apps.knucklebones.position import Shown, solve

    # the answer looks the tables up where they are built and searches where they are not
    how = "looking up (or searching)" if use_tables else "searching"
    with progress.task(f"knucklebones solve: {how}"):
        a = solve(board1, board2, die, depth, variant, data_dir, use_tables)
    out.print(f"scores {a.mover_score} - {a.opponent_score}, die {a.die}, {_source(a)}")
    _say_tables(a, data_dir)
    best = a.best
    assert best is not None  # the game is not over (solve refuses a full board): a column is legal
    looked_up = a.source if a.source in ("tables", "book") else ""
    out.print(
        f"best column {best.column}: {_fmt(Shown(best.win, best.diff, best.exact, looked_up))}"
    )
    if a.other_best is not None:
        other = "score difference" if a.objective == "wins" else "win probability"
        out.print(
            f"note: the {other} alone would pick column {a.other_best}; the {a.objective} "
            f"objective ({a.variant}) decides"
        )
    table = Table("column", "win", "score difference", "exact")
    looked = {"tables": "yes (from tables)", "book": "yes (book)"}.get(a.source)
    for cv in sorted(a.columns, key=lambda c: c.column):  # the board's order; * marks the pick
        mark = " *" if cv.best else ""
        exact = looked or ("yes" if cv.exact else "no")
        table.add_row(f"{cv.column}{mark}", _num(cv.win, ".6f"), _num(cv.diff, "+.4f"), exact)
    out.print(table)


def _say_tables(a: BoardAnswer, data_dir: Path) -> None:
    """Which tables the values come from, and which objective's are missing (``-``)."""
    if not a.tables:
        return
    fields = {"wins": "win", "score": "score"}
    other = "score" if a.objective == "wins" else "wins"
    named = [f"{a.tables[0]} ({fields[a.objective]})"]
    if len(a.tables) > 1:
        named.append(f"{a.tables[1]} ({fields[other]})")
    out.print(f"values looked up in {data_dir}: {', '.join(named)}")
    if len(a.tables) == 1:
        out.print(
            f"note: {a.tables[0]} is built but not its {other} objective: its values are shown "
            f"as - (build the {other} variant of the board too)"
        )


def _tree(node: TreeNode, into: Tree) -> None:
    for child in node.children:
        label = child.label if child.value is None else f"{child.label}: {_fmt(child.value)}"
        _tree(child, into.add(label))


@kb.command("tree")
def tree_cmd(
    board1: Board1,
    board2: Board2,
    die: Die,
    depth: Annotated[int, typer.Option(help="Placements to print (1..3).")] = 2,
    variant: BoardVariant = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
) -> None:
    """Print the search tree: each column, each reply roll, each reply (values: first player's).

    With the full game's tables in --data-dir (built with --device cuda) every value is looked
    up and exact; otherwise searched.

    Example: stb-pipeline knucklebones tree 44/1/_ 2/_/_ 4 --depth 2
    """
    from rich.console import Console
    from rich.tree import Tree

    from pipeline.apps.knucklebones.position import search_tree

    root = search_tree(board1, board2, die, depth, data_dir, variant)
    tree = Tree(root.label)
    _tree(root, tree)
    # wide enough for depth-3 labels: a pipe's default 80 columns would cut them off
    Console(highlight=False, width=max(out.width, 160)).print(tree)


def _read_line(prompt: str) -> str | None:
    out.print(prompt, end="")
    line = sys.stdin.readline()
    return line if line else None


@kb.command("play")
def play_cmd(
    seed: Annotated[int, typer.Option(help="Seed of the dice.")] = 0,
    depth: Annotated[int | None, typer.Option(help=DEPTH_HELP)] = None,
    second: Annotated[bool, typer.Option("--second", help="Let the solver move first.")] = False,
    variant: BoardVariant = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Play a game against the solver in the terminal (type a column number for each die; q
    quits).

    With the full game's tables in --data-dir (`build --variant knucklebones --variant
    knucklebones-score --device cuda`) the solver plays perfectly; otherwise it searches.

    Example: stb-pipeline knucklebones play --seed 7 --depth 4
    """
    from pipeline.apps.knucklebones.position import play

    play(
        _read_line, out.print, seed=seed, depth=depth, human_first=not second,
        data_dir=data_dir, variant=variant,
    )  # fmt: skip


@kb.command("benchmark")
def benchmark_cmd(
    games: Annotated[int, typer.Option(help="Games per (depth, opponent) pair.")] = 2000,
    seed: Annotated[int, typer.Option(help="Base seed (each row records its own).")] = 1,
    depths: Annotated[str, typer.Option(help="Our search depths, comma-separated.")] = "1,2,3,4",
    opponents: Annotated[
        str,
        typer.Option(
            help=f"Opponents, comma-separated: {', '.join(OPPONENTS)}, ours-dN, perfect (exact "
            "play from the full game's tables in --data-dir, built with --device cuda)."
        ),
    ] = ",".join(OPPONENTS),
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Play our search against random, greedy and the Rust solver's heuristic; write benchmarks
    rows.

    Example: stb-pipeline knucklebones benchmark --games 2000 --seed 1
    """
    from pipeline.apps.knucklebones.match import (
        benchmark_frame,
        make_player,
        player_names,
        write_benchmark_rows,
    )
    from pipeline.apps.knucklebones.position import check_depth
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

    parts = [p.strip() for p in depths.split(",")]  # small whole numbers
    if not all(p.isascii() and p.isdigit() and len(p) < 4 for p in parts):
        raise UsageError(f"--depths {depths!r}: give whole numbers separated by commas")
    depth_list = [int(p) for p in parts]
    for d in depth_list:
        check_depth(d)
    opp_list = player_names(opponents, "--opponents")
    within("--games", games, 1, MAX_GAMES)
    within("--seed", seed, 0, MAX_SEED)
    from pipeline.store.tables import ensure_writable

    ensure_writable(data_dir)  # fail before the games are played, not after
    game = Knucklebones(KnuckleRules())
    answers = None
    if "perfect" in opp_list:
        from pipeline.answer.answers import for_dir

        answers = for_dir(data_dir)
        make_player(game, "perfect", answers)  # says what to build when the tables are missing
    total = games * len(depth_list) * len(opp_list)
    with progress.task("knucklebones benchmark", total=total, unit="games") as job:
        frame = benchmark_frame(game, depth_list, opp_list, games, seed, job.advance, answers)
    path = write_benchmark_rows(data_dir, frame, game)
    _print_benchmark(frame)
    out.print(f"rows written to {path} (variant knucklebones)")


def _print_benchmark(frame: pl.DataFrame) -> None:
    """The benchmark's rows as a table: each pairing's results and win rate."""
    from rich.table import Table

    table = Table("ours", "opponent", "wins", "draws", "losses", "win rate (95% CI)", "median ms")
    for r in frame.iter_rows(named=True):
        table.add_row(
            r["strategy"], r["opponent"], *(str(r[k]) for k in ("wins", "draws", "losses")),
            f"{r['win_rate']:.3f} ({r['ci_low']:.3f}-{r['ci_high']:.3f})",
            f"{r['median_decision_ms']:.2f}",
        )  # fmt: skip
    out.print(table)


@kb.command("solve-exact")
def solve_exact_cmd(
    columns: Annotated[int, typer.Option(help="Columns per board.")] = 3,
    rows: Annotated[int, typer.Option(help="Slots per column.")] = 2,
    faces: Annotated[int, typer.Option(help="Faces of the die.")] = 6,
    objective: Annotated[str, typer.Option(help="wins or score.")] = "wins",
    workers: Annotated[int, typer.Option(help="Dask worker processes (0: this process).")] = 0,
    address: Annotated[
        str | None, typer.Option(help="Join a running Dask scheduler (host:port).")
    ] = None,
    shards: Annotated[
        int | None, typer.Option(help="Id ranges, one task each (Dask runs; default: 4 per core).")
    ] = None,
    checkpoint_dir: Annotated[
        str | None, typer.Option(help="Checkpoint after every sweep (Dask runs).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a checkpoint.")] = False,
    tolerance: Annotated[float, typer.Option(help="Bound on every value's error.")] = 1e-11,
    device: Annotated[
        str,
        typer.Option(
            help="cpu, or cuda: one NVIDIA GPU (pip install '.[gpu]'); float64 bounds where they "
            "fit in its memory, else float32 (then --tolerance 1e-6 or more)."
        ),
    ] = "cpu",
) -> None:
    """Solve a whole board exactly by value iteration (no move graph); print the start value.

    Every value is within --tolerance of the exact one: the solver keeps a lower and an upper
    bound of each and stops when they are that close. --device cuda solves the full game
    (--rows 3) on one 80 GB GPU: 45 s on an H100 for wins (64 sweeps), 56 s for score (80)
    (docs/knucklebones-full-game.md).

    Example: stb-pipeline knucklebones solve-exact --columns 3 --rows 2 --workers 2
    """
    import numpy as np

    from pipeline.games.knucklebones.exact import solver
    from pipeline.games.knucklebones.game import KnuckleRules

    rules = KnuckleRules(columns, rows, faces, objective)

    def progress(sweep: int, residual: float, bound: float, rate: float) -> None:
        """One line per sweep."""
        out.print(f"sweep {sweep}: change {residual:.3g}, bound {bound:.3g}, {rate:,.0f} pos/s")

    sol = solver.solve(
        rules, device, tol=tolerance, progress=progress, workers=workers, address=address,
        shards=shards, checkpoint_dir=checkpoint_dir, resume=resume,
    )  # fmt: skip
    where = {"cpu": "in this process", "dask": "on Dask workers", "cuda": "on the GPU"}
    out.print(
        f"start value {sol.value_of(0):.10f} ({objective}), {sol.n_states:,} positions, "
        f"{np.dtype(sol.dtype).name} bounds {where[sol.backend]}"
    )
    out.print(
        f"{sol.sweeps} sweeps, every value within {sol.bound:.3g}, "
        f"{sol.sweep_seconds:.1f} s of sweeps, {sol.seconds:.1f} s in all; "
        f"start value to 15 digits {sol.value_of(0):.15g}"
    )


@kb.command("check-tables")
def check_tables_cmd(
    columns: Annotated[int, typer.Option(help="Columns per board.")] = 3,
    rows: Annotated[int, typer.Option(help="Slots per column.")] = 3,
    faces: Annotated[int, typer.Option(help="Faces of the die.")] = 6,
    samples: Annotated[int, typer.Option(help="Positions drawn (uniformly, by state id).")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 1,
    data_dir: DataDir = DEFAULT_DATA_DIR,
) -> None:
    """Check the Bellman equation on a seeded sample of a built board's positions (both
    objectives): the way to verify the full game's 4.8 billion rows without reading them all.

    Example: stb-pipeline knucklebones check-tables --samples 100 --seed 7
    """
    from pipeline.apps.knucklebones.known import check_sample
    from pipeline.errors import ContractError
    from pipeline.games.knucklebones.game import KnuckleRules

    within("--samples", samples, 1, 100_000)
    within("--seed", seed, 0, MAX_SEED)
    rules = KnuckleRules(columns, rows, faces)
    with progress.task("knucklebones check-tables: looking up the sample and its successors"):
        found = check_sample(data_dir, rules, samples, seed)
    for k, name in enumerate(found.variants):
        out.print(
            f"{name}: {found.samples} positions (seed {found.seed}, {found.live[k]} in play), "
            f"largest Bellman residual {found.max_residual[k]:.3g}, allowed {found.allowed[k]:.3g}"
        )
    if not found.ok:
        raise ContractError("the Bellman equation fails on the sample: rebuild the tables")
    out.print("ok: every sampled value equals its Bellman recomputation within the allowance")


@kb.command("check-artefacts")
def check_artefacts_cmd(
    models: Annotated[
        Path | None,
        typer.Option(
            help="The folder of evaluators, books and labelled positions (default: the package's)."
        ),
    ] = None,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact/--no-exact",
            help="Compare every value with an exact solve of its board (read from its tables "
            "in --data-dir where both objectives are built, else solved here: minutes for "
            "3x3-d4); the full game's are too big for a CPU.",
        ),
    ] = True,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Check the artefacts kept in the repository (evaluators, opening books, labelled
    positions): each readable and of the board its name says, then their contract: every value
    against an exact solve of its board (best and other choices, every book entry), the
    Bellman equation among their own values, ranges, the full game's published start value,
    provenance; exit 3 on a violation. An artefact not made yet (the full game's, until its
    GPU call) is reported absent.

    Example: stb-pipeline knucklebones check-artefacts --data-dir data
    """
    from pipeline.analysis.contracts import VariantCheck, failure
    from pipeline.analysis.knucklebones_artefacts import check_packaged, contract_results
    from pipeline.cli.verify import print_result

    if models is not None and not models.is_dir():
        raise UsageError(f"--models {models} is not a folder")
    solve = _exact_solve(data_dir) if exact else None
    with progress.task("knucklebones check-artefacts: reading the artefacts"):
        found = contract_results(check_packaged(models, solve))
    for result in found:
        print_result(result)
    error = failure([VariantCheck(None, found)])
    if error is not None:
        raise error
    skipped = sum(bool(r.skipped) for r in found)
    out.print(f"all {len(found) - skipped} artefact checks hold ({skipped} skipped)")


def _exact_solve(data_dir: Path) -> Any:
    """The exact values of a board as `check-artefacts` compares them: from its tables in
    ``data_dir`` where both objectives are built, else solved here (None: too big)."""
    from pipeline.apps.knucklebones.distill import MAX_STATES, exact_values
    from pipeline.games.knucklebones.game import board_game

    def solve(board: Any) -> dict[str, Any] | None:
        if board_game(board).n_states > MAX_STATES:
            return None
        return exact_values(board, data_dir).values

    return solve


@kb.command("loss")
def loss_cmd(
    players: Annotated[
        str, typer.Option(help="Players, comma-separated: greedy, random, seed-dN, ours-dN.")
    ] = "greedy,seed-d4,ours-d2",  # sample.PLAYERS, kept literal: importing it costs startup
    games: Annotated[
        int, typer.Option(help="Random-vs-random games whose decisions are the sample.")
    ] = 100,  # sample.GAMES
    seed: Annotated[int, typer.Option(help="Seed of the sample (and of the players' ties).")] = 1,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """What each player loses against perfect play on the full game's exact tables: its regret
    (win probability and points) at every decision of a fixed, seeded sample of positions.

    Needs `build --variant knucklebones --variant knucklebones-score --device cuda` in
    --data-dir. seed-d4 is the Rust solver's depth-4 heuristic, ours-dN our search.

    Example: stb-pipeline knucklebones loss --players greedy,seed-d4,ours-d2 --games 100
    """
    from rich.table import Table

    from pipeline.apps.knucklebones.loss import losses
    from pipeline.apps.knucklebones.match import player_names

    names = player_names(players, "--players")
    within("--games", games, 1, 100_000)
    within("--seed", seed, 0, MAX_SEED)
    with progress.task("knucklebones loss: pricing the sampled decisions"):
        found = losses(data_dir, names, games, seed)
    table = Table("player", "decisions", "suboptimal", "mean win lost", "max win lost",
                  "mean points lost")  # fmt: skip
    for r in found:
        table.add_row(
            r.player, f"{r.decisions:,}", f"{r.share_suboptimal:.3f}",
            f"{r.mean_win_regret:.5f}", f"{r.max_win_regret:.4f}", f"{r.mean_score_regret:.3f}",
        )  # fmt: skip
    out.print(table)
    out.print(f"sample: the decisions of {games} random-vs-random games, seed {seed}")


def register(app: typer.Typer) -> None:
    """Add the `knucklebones` command group (with `label`, `train`, `book`, `rate` and
    `self-play`)."""
    kb.registered_commands.extend(players.registered_commands)
    app.add_typer(kb, name="knucklebones")
