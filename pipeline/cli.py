"""The `stb-pipeline` command: a thin layer that parses, calls the library and prints.

Every domain error becomes one line on stderr and its exit code (see ``pipeline.errors``):
0 success, 1 a failure reading or writing tables, 2 bad input (usage, tiles, rolls, variants),
3 a data contract broken (`verify`), 130 interrupted. The README's "Exit codes" lists them.
"""

import functools
import inspect
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pipeline import answers, stages
from pipeline.commands import register_all
from pipeline.errors import PipelineError, UsageError, exit_with
from pipeline.games.shutbox import RuleSet
from pipeline.variants import REGISTRY, Variant, custom_variant, get_variant, resolve

app = typer.Typer(
    help="Exact solutions of Shut the Box family dice games, as Parquet tables.\n\n"
    "Example: stb-pipeline build --variant all",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
out = Console(highlight=False, soft_wrap=True, width=max(Console().width, 100))

DEFAULT_DATA_DIR = Path(os.environ.get("STB_DATA_DIR", "data"))
DataDir = Annotated[Path, typer.Option("--data-dir", "-d", help="Directory of the Parquet tables.")]
OneVariant = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        help="Variant name (see `stb-pipeline variants`; default classic), or custom with rule "
        "options.",
    ),
]
P1Score = Annotated[
    int | None, typer.Option("--p1-score", help="Player 1's score (two-player game, P2 states).")
]

#: Options that describe a custom one-player rule set; added to commands by @with_rules.
RULE_OPTIONS: dict[str, tuple[type, str]] = {
    "tiles": (int, "Custom rules: number of tiles (1..n)."),
    "dice": (int, "Custom rules: number of dice normally rolled."),
    "sides": (int, "Custom rules: sides of each die."),
    "one_die": (str, "Custom rules: one-die rule: never, forced or optional."),
    "one_die_sum": (int, "Custom rules: one die when the open tiles sum to at most this."),
    "one_die_shut": (str, "Custom rules: one die once these tiles are shut, e.g. 789."),
    "objective": (str, "Custom rules: shut (max P(shut)), score (min E[score]) or target."),
    "target": (int, "Custom rules: for objective target, maximise P(score <= target)."),
    "max_per_move": (int, "Custom rules: at most this many tiles shut per roll."),
    "scoring": (str, "Custom rules: sum (of open tiles) or digital (tiles read as a number)."),
    "name": (str, "Custom rules: the variant name to store them under."),
}


#: What a custom variant name may look like (it is written in tables and typed in --variant).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def rules_from_options(values: dict[str, Any]) -> Variant | None:
    """A custom variant from the rule options given, or None when none was given."""
    given = {k: v for k, v in values.items() if v is not None and k != "name"}
    name = values.get("name")
    if name is not None and not VARIANT_NAME.fullmatch(name):
        raise UsageError(
            f"--name {name!r}: use letters, digits, '.', '_' and '-' (not first), e.g. my-rules"
        )
    if not given:
        if values.get("name"):
            raise UsageError("--name needs rule options such as --tiles")
        return None
    if "one_die_shut" in given:
        text = str(given["one_die_shut"]).replace(",", " ")
        tokens = text.split() if " " in text.strip() else list(text.strip())
        if not tokens or not all(t.isdigit() and t.isascii() for t in tokens):
            raise UsageError(f"--one-die-shut {given['one_die_shut']!r}: give tiles, e.g. 789")
        given["one_die_shut"] = tuple(int(t) for t in tokens)
    if "one_die" not in given and ("one_die_sum" in given or "one_die_shut" in given):
        given["one_die"] = "optional"
    return custom_variant(RuleSet(**given), values.get("name"))


def with_rules(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the custom rule options to a command; it receives them as ``custom: Variant | None``."""
    sig = inspect.signature(fn)
    extra = [
        inspect.Parameter(
            f"rule_{name}",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                kind | None,
                typer.Option(
                    f"--{name.replace('_', '-')}", help=text, rich_help_panel="Custom rules"
                ),
            ],
        )
        for name, (kind, text) in RULE_OPTIONS.items()
    ]
    params = [p for p in sig.parameters.values() if p.name != "custom"] + extra

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        values = {name: kwargs.pop(f"rule_{name}") for name in RULE_OPTIONS}
        kwargs["custom"] = rules_from_options(values)
        return fn(**kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def pick_variants(names: list[str], custom: Variant | None) -> list[Variant]:
    """The variants a command acts on: the custom rule set, or the named ones (none: all)."""
    flat = [part for n in names for part in n.split(",") if part]
    if custom is not None:
        if any(n != "custom" for n in flat):
            raise UsageError("give either --variant NAME or custom rule options, not both")
        return [custom]
    if "custom" in flat:
        raise UsageError("--variant custom needs rule options such as --tiles 12")
    return resolve(flat or ["all"])


def pick_one(name: str | None, custom: Variant | None) -> Variant:
    """The single variant a question is about (none named: classic)."""
    if custom is not None:
        return pick_variants([name or "custom"], custom)[0]
    if name == "all":
        raise UsageError("name one variant, not all")
    return get_variant(name or "classic")


ManyVariants = Annotated[
    list[str],
    typer.Option(
        "--variant", "-v", help="Variant names (repeat or comma-separate) or all (the default)."
    ),
]
Exact = Annotated[
    bool,
    typer.Option(
        "--exact",
        help="Also solve in exact fractions (small games), check the floats against them "
        "and store them in states.value_exact.",
    ),
]


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
        chosen = pick_variants(variant, custom)
        reports = stages.run(chosen, stage_list, data_dir, exact=exact)
        print_reports(reports, data_dir)

    command.__doc__ = f"{summary}\n\nExample: {example}"
    app.command(name)(command)


def print_reports(reports: list[stages.StageReport], data_dir: Path) -> None:
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
    custom: Variant | None = None,
) -> None:
    """Run every stage (enumerate, edges, solve, policy) for the variants.

    A variant whose rules and code hash match data/manifest.json, and whose tables are unchanged
    since, is skipped (and says so); --force rebuilds it.

    Example: stb-pipeline build --variant all
    """
    chosen = pick_variants(variant, custom)
    reports = stages.run(chosen, stages.STAGES, data_dir, exact=exact, skip_unchanged=not force)
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
        err.print(
            f"error: internal error {type(exc).__name__}: {exc} (STB_DEBUG=1 shows more)",
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
    exit_with(lambda: run(sys.argv[1:]))


if __name__ == "__main__":
    main()
