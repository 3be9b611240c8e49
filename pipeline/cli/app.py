"""The `stb-pipeline` command: a thin layer that parses, calls the library and prints.

Every domain error becomes one line on stderr and its exit code (see ``pipeline.errors``):
0 success, 1 a failure reading or writing tables, 2 bad input (usage, tiles, rolls, variants),
3 a data contract broken (`verify`), 130 interrupted. The README's "Exit codes" lists them.
"""

# No `from __future__ import annotations`: typer reads the Annotated options at run time.
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from pipeline.cli.commands import register_all
from pipeline.cli.options import (
    DEFAULT_DATA_DIR,
    DataDir,
    Exact,
    ManyVariants,
    OneVariant,
    P1Score,
    out,
    pick_one,
    pick_variants,
    with_rules,
)
from pipeline.errors import PipelineError, UsageError, exit_with
from pipeline.games.registry import REGISTRY, Variant

if TYPE_CHECKING:
    from pipeline.build.stages import StageReport

app = typer.Typer(
    help="Exact solutions of Shut the Box family dice games, as Parquet tables.\n\n"
    "Example: stb-pipeline build --variant all",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _stage_command(name: str, stage_list: tuple[str, ...], summary: str, example: str) -> None:
    """Register a command that runs ``stage_list`` for the chosen variants."""

    @with_rules
    def command(
        variant: ManyVariants = [],  # noqa: B006  (typer needs a literal default)
        data_dir: DataDir = DEFAULT_DATA_DIR,
        exact: Exact = False,
        custom: Variant | None = None,
    ) -> None:
        if exact and "solve" not in stage_list:
            raise UsageError("--exact applies to solve and build")
        from pipeline.build import stages

        chosen = pick_variants(variant, custom)
        reports = stages.run(chosen, stage_list, data_dir, exact=exact)
        print_reports(reports, data_dir)

    command.__doc__ = f"{summary}\n\nExample: {example}"
    app.command(name)(command)


def print_reports(reports: "list[StageReport]", data_dir: Path) -> None:
    """A short summary table of what a run produced."""
    written = sorted({t for r in reports for t in r.tables})
    title = f"tables written to {data_dir}/" if written else f"tables in {data_dir}/"
    table = Table(title=title, title_justify="left")
    for col in ("variant", "states", "nodes", "moves", "value at start", "seconds"):
        table.add_column(col, justify="left" if col == "variant" else "right", no_wrap=True)
    for r in reports:
        start = "" if r.start_value is None else f"{r.start_value:.12g}"
        seconds = "skipped" if r.skipped else f"{r.seconds:.2f}"
        table.add_row(r.variant, f"{r.states:,}", f"{r.nodes:,}", f"{r.moves:,}", start, seconds)
    out.print(table)
    out.print(f"tables: {', '.join(written) or 'none written (nothing changed)'}")
    for r in reports:
        if r.note:
            out.print(f"{r.variant}: {r.note}")


_stage_command(
    "enumerate",
    ("enumerate",),
    "Enumerate states into states.parquet (values left empty).",
    "stb-pipeline enumerate --variant classic",
)
_stage_command(
    "edges",
    ("edges",),
    "Write successor edges (state, dice, roll, probability, move, next).",
    "stb-pipeline edges --variant classic",
)
_stage_command(
    "solve",
    ("enumerate", "solve"),
    "Solve values in rank order into states.parquet.",
    "stb-pipeline solve --variant lever",
)
_stage_command(
    "policy",
    ("policy",),
    "Write the best move of every (state, roll) and every move's regret.",
    "stb-pipeline policy --variant classic",
)


@app.command("build")
@with_rules
def build_cmd(
    variant: ManyVariants = [],  # noqa: B006  (typer needs a literal default)
    data_dir: DataDir = DEFAULT_DATA_DIR,
    exact: Exact = False,
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild variants that manifest.json shows unchanged.")
    ] = False,
    moves: Annotated[
        bool,
        typer.Option(
            "--moves",
            help="Big custom boxes (16+ tiles): also write every legal move and its regret.",
        ),
    ] = False,
    edges: Annotated[
        bool,
        typer.Option("--edges", help="Big custom boxes (16+ tiles): also write the edges table."),
    ] = False,
    custom: Variant | None = None,
) -> None:
    """Run every stage (enumerate, edges, solve, policy) for the variants.

    A variant whose rules and code hash match data/manifest.json, and whose tables are unchanged
    since, is skipped (and says so); --force rebuilds it.

    Example: stb-pipeline build --variant all
    """
    from pipeline.build import stages

    chosen = pick_variants(variant, custom)
    extra = [name for name, wanted in (("moves", moves), ("edges", edges)) if wanted]
    reports = stages.run(
        chosen, stages.STAGES, data_dir, exact=exact, skip_unchanged=not force, extra_tables=extra
    )
    print_reports(reports, data_dir)


@app.command("expect")
@with_rules
def expect_cmd(
    tiles: Annotated[
        str,
        typer.Argument(
            help="Open tiles, increasing, e.g. 12345 (or 1,2,10). Double Shutter: 000000000 "
            "or 'front=1234 back=6789'."
        ),
    ],
    variant: OneVariant = None,
    p1_score: P1Score = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    custom: Variant | None = None,
) -> None:
    """Print the value of a state (P(shut), expected score, ... per the variant's objective).

    Example: stb-pipeline expect --variant classic 123456789
    """
    from pipeline.analysis import answers

    found = answers.expect(data_dir, pick_one(variant, custom), tiles, p1_score=p1_score)
    out.print(f"{found.value!r}")


@app.command("move")
@with_rules
def move_cmd(
    tiles: Annotated[
        str,
        typer.Argument(
            help="Open tiles, increasing, e.g. 12345. Double Shutter: 000000000 "
            "or 'front=1234 back=6789'."
        ),
    ],
    roll: Annotated[int, typer.Argument(help="The dice total rolled.")],
    variant: OneVariant = None,
    p1_score: P1Score = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    custom: Variant | None = None,
) -> None:
    """Print the best move for a roll, its value, and what each other legal move loses.

    Example: stb-pipeline move --variant classic 12345 7
    """
    from pipeline.analysis import answers

    advice = answers.best_move(data_dir, pick_one(variant, custom), tiles, roll, p1_score=p1_score)
    if advice.best_move is None:
        ends = "the turn passes" if advice.passes_turn else "the game ends"
        out.print(f"no legal move: {ends}, value {advice.value!r}")
        return
    out.print(f"best move {advice.best_move}  value {advice.value!r}")
    table = Table("move", "leaves", "value", "loses")
    for row in advice.moves.iter_rows(named=True):
        table.add_row(
            str(row["move"]),
            row["next_tiles"] or "(shut)",
            f"{row['value']:.12g}",
            f"{row['regret']:.3g}",
        )
    out.print(table)


@app.command("variants")
def variants_cmd() -> None:
    """List the registered variants; `all` builds those marked yes.

    Example: stb-pipeline variants
    """
    table = Table("variant", "in all", "description")
    for v in REGISTRY.values():
        table.add_row(v.name, "yes" if v.in_all else "no", v.description)
    out.print(table)


register_all(app)


def run(argv: list[str]) -> int:
    """Run the CLI on ``argv``; return the exit code. Errors become one line on stderr."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        result = app(args=argv, prog_name="stb-pipeline", standalone_mode=False)
    except PipelineError as exc:
        err.print(f"error: {exc}", markup=False)
        return exc.exit_code
    except typer.TyperException as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            err.print(ctx.get_help(), markup=False)
        else:
            err.print(f"error: {exc.format_message()} (see --help)", markup=False)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        err.print("error: aborted", markup=False)
        return 130
    except KeyboardInterrupt:
        err.print(f"error: {INTERRUPTED}", markup=False)
        return 130
    except BrokenPipeError:
        raise  # the reader of stdout went away: main() ends quietly
    except Exception as exc:
        if os.environ.get("STB_DEBUG"):
            raise
        # Every failure a user can cause is a PipelineError; reaching here is a bug (the bad-input
        # tests fail on it). Still one line, so that scripts reading stderr are not flooded.
        first = str(exc).splitlines()[0] if str(exc) else ""
        err.print(
            f"error: internal error {type(exc).__name__}: {first} (a bug: please report it; "
            "STB_DEBUG=1 shows the traceback)",
            markup=False,
        )
        return 1
    code = result if isinstance(result, int) else 0
    if code == 130:  # typer turns Ctrl-C into this code without a word
        err.print(f"error: {INTERRUPTED}", markup=False)
    return code


INTERRUPTED = "interrupted; every table on disk is complete (old or new)"


def main() -> None:
    """Console-script entry point."""
    # `kill` (SIGTERM) or a closed terminal (SIGHUP) would end the process without running
    # any cleanup; as an interrupt they remove their temporary files on the way out.
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _interrupt)
    exit_with(lambda: run(sys.argv[1:]))


def _interrupt(signum: int, frame: object) -> None:
    """Signal handler: stop as Ctrl-C does."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
