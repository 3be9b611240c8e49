"""The `stb-pipeline` command: a thin layer that parses, calls the library and prints.

Every domain error becomes one line on stderr and its exit code (see ``pipeline.errors``):
0 success, 1 a failure reading or writing tables, 2 bad input (usage, tiles, rolls, variants),
3 a data contract broken (`verify`), 130 interrupted. The README's "Exit codes" lists them.
"""

# No `from __future__ import annotations`: typer reads the Annotated options at run time.
import copy
import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer

from pipeline.cli.commands import register_all
from pipeline.cli.options import (
    DEFAULT_DATA_DIR,
    DataDir,
    Exact,
    LazyConsole,
    ManyVariants,
    OneVariant,
    Quiet,
    Tiles,
    fitted_table,
    in_place_of,
    listing_options,
    out,
    pick_one,
    pick_variants,
    say,
    with_position,
    with_rules,
)
from pipeline.errors import (
    INTERRUPTED,
    PipelineError,
    TablesMissingError,
    UsageError,
    exit_with,
)
from pipeline.games.registry import REGISTRY, Variant
from pipeline.games.rule_options import CUSTOM_RULE_OPTIONS

if TYPE_CHECKING:
    from pipeline.stages.build import StageReport

app = typer.Typer(
    help="Exact solutions of Shut the Box family dice games, as Parquet tables.\n\n"
    "Example: stb-pipeline build --variant all",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # plain help: rich markup would eat "[score]" and print "<bool>" beside every flag
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    """`stb-pipeline --version`: the package's version, then exit."""
    if value:
        from pipeline._version import __version__

        say(f"stb-pipeline {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Options of stb-pipeline itself (before any command)."""


def _stage_command(name: str, summary: str, example: str) -> None:
    """Register a command that runs stage ``name`` for the chosen variants (`solve` enumerates
    first, as its values go into states.parquet; --exact only where values are solved);
    ``example``: the variants of its help's example."""
    stage_list = ("enumerate", "solve") if name == "solve" else (name,)

    @with_rules
    def command(
        variant: ManyVariants = [],  # noqa: B006  (typer needs a literal default)
        data_dir: DataDir = DEFAULT_DATA_DIR,
        exact: Exact = False,
        quiet: Quiet = False,
        custom: Variant | None = None,
    ) -> None:
        searching = stage_list == ("strategies",)
        if searching and not variant and custom is None:
            variant = searchable_built(data_dir)  # `all` names games it cannot search
        reports = _run_stages(variant, custom, stage_list, data_dir, exact=exact)
        if searching:
            print_best_rules([r.variant for r in reports], data_dir)

    if "solve" not in stage_list:  # no --exact option where no values are solved
        command = in_place_of(command, "exact", {}, lambda: False)
    command.__doc__ = f"{summary}\n\nExample: stb-pipeline {name} --variant {example}"
    app.command(name)(command)


def _run_stages(
    names: list[str],
    custom: Variant | None,
    stage_list: tuple[str, ...],
    data_dir: Path,
    exact: bool,
    skip_unchanged: bool = False,
    extra: list[str] | None = None,
    repair: bool = False,
    device: str = "cpu",
) -> "list[StageReport]":
    """Run the stages for the chosen variants and print the summary (``extra``: the optional
    tables of the boards built without a graph, `moves` and `edges`; ``device``: where those
    boards are solved)."""
    from pipeline.stages import build as stages

    chosen = pick_variants(names, custom, data_dir)
    if device not in ("cpu", "cuda"):
        raise UsageError(f"--device must be cpu or cuda, not {device!r}")
    reports = stages.run(
        chosen,
        stage_list,
        data_dir,
        exact,
        skip_unchanged=skip_unchanged,
        extra_tables=extra or (),
        repair=repair,
        device=device,
    )
    if stage_list == ("strategies",):
        return reports  # the command prints what was found (print_best_rules), not the build
    print_reports(reports, data_dir)
    return reports


def searchable_built(data_dir: Path) -> list[str]:
    """What `strategies` searches when no variant is named: every variant built in
    ``data_dir`` whose game has rules to search (the one-player boxes); TablesMissingError
    when there is none."""
    from pipeline.store import directory

    entries = directory.of(data_dir).snapshot().entries if data_dir.is_dir() else {}
    found = [n for n, e in sorted(entries.items()) if e.built and e.variant.make().searches_rules]
    if not found:
        raise TablesMissingError(
            f"no one-player box is built in {data_dir}: build one first (stb-pipeline build "
            f"--variant classic --data-dir {data_dir}), or name one with --variant"
        )
    return [",".join(found)]


def print_best_rules(names: list[str], data_dir: Path) -> None:
    """What `strategies` found for each variant: the best rule of at most three keys, what it
    loses against optimal play, and the command that shows the whole card."""
    from pipeline.analysis import sql

    for name in names:
        card = sql.run_query("strategy_card", data_dir, variant=name)
        best = card.filter(card["place"] == 3).row(0, named=True)
        out.print(
            f"{name}: best rule of at most 3 keys: {best['rule']}; P(shut) {best['p_shut']:.6g}, "
            f"expected score {best['expected_score']:.6g}; {best['gap']:.3g} less than optimal "
            "play (per the variant's objective)",
            soft_wrap=True,
        )
        out.print(f"  the card: stb-pipeline query strategy_card --variant {name} -d {data_dir}")


def print_reports(reports: "list[StageReport]", data_dir: Path) -> None:
    """A short summary table of what a run produced."""
    written = sorted({t for r in reports for t in r.tables})
    title = f"tables written to {data_dir}/" if written else f"tables in {data_dir}/"
    numbers = ("states", "nodes", "moves", "value at start", "seconds")
    table = fitted_table(
        "variant", *numbers, fold="variant", right=numbers, title=title, title_justify="left"
    )
    for r in reports:
        start = "" if r.start_value is None else f"{r.start_value:.12g}"
        seconds = "skipped" if r.skipped else f"{r.seconds:.2f}"
        table.add_row(r.variant, f"{r.states:,}", f"{r.nodes:,}", f"{r.moves:,}", start, seconds)
    out.print(table)
    # these lines wrap at the table's width (a pipe: 1000 columns, so never)
    out.print(f"tables: {', '.join(written) or 'none written (nothing changed)'}", soft_wrap=False)
    for r in reports:
        if r.note:
            out.print(f"{r.variant}: {r.note}", soft_wrap=False)


_stage_command("enumerate", "Enumerate states into states.parquet (values left empty).", "classic")
_stage_command(
    "edges", "Write successor edges (state, dice, roll, probability, move, next).", "classic"
)
_stage_command("solve", "Solve values in rank order into states.parquet.", "lever")
_stage_command(
    "policy", "Write the best move of every (state, roll) and every move's regret.", "classic"
)
_stage_command(
    "strategies",
    "Search the rules a person can remember (up to three move keys and a one-die threshold) on "
    "one-player boxes, each priced exactly, and the exceptions worth learning, into "
    "strategy_search.parquet and strategy_exceptions.parquet. Without --variant: every "
    "one-player box built in the data directory.",
    "lever,twelve-tiles",
)


Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Rebuild variants that manifest.json shows unchanged, and every variant a "
        "changed shared table held.",
    ),
]
#: What --moves and --edges apply to.
NO_GRAPH = (
    "Boards built without a graph (custom boxes of 13+ tiles, the opt-in Knucklebones boards)"
)
Moves = Annotated[
    bool, typer.Option("--moves", help=f"{NO_GRAPH}: also write every legal move and its regret.")
]
Edges = Annotated[bool, typer.Option("--edges", help=f"{NO_GRAPH}: also write the edges table.")]
Device = Annotated[
    str,
    typer.Option(
        "--device",
        help="Where the boards built without a graph are solved: cpu, or cuda (one NVIDIA "
        "GPU, pip install '.[gpu]'; the opt-in Knucklebones boards, the full game included).",
    ),
]


@app.command("build")
@with_rules
def build_cmd(
    variant: ManyVariants = [],  # noqa: B006  (typer needs a literal default)
    data_dir: DataDir = DEFAULT_DATA_DIR,
    exact: Exact = False,
    force: Force = False,
    moves: Moves = False,
    edges: Edges = False,
    device: Device = "cpu",
    quiet: Quiet = False,
    custom: Variant | None = None,
) -> None:
    """Run every stage (enumerate, edges, solve, policy, strategies) for the variants.

    The strategies stage (the rules a person can remember) runs for one-player boxes of at most
    9 tiles without a choice of dice; `stb-pipeline strategies` runs it for the others.

    A variant whose rules and code hash match data/manifest.json, and whose tables are unchanged
    since, is skipped (and says so); --force rebuilds it. Custom rules: see `stb-pipeline rules`.

    Example: stb-pipeline build --variant classic --data-dir data
    """
    extra = [name for name, wanted in (("moves", moves), ("edges", edges)) if wanted]
    stage_list = ("enumerate", "edges", "solve", "policy", "strategies")
    _run_stages(
        variant, custom, stage_list, data_dir, exact, skip_unchanged=not force, extra=extra,
        repair=force, device=device,
    )  # fmt: skip


@app.command("expect")
@with_rules
@with_position
def expect_cmd(
    tiles: Tiles,
    variant: OneVariant = None,
    extra: dict[str, int] | None = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    custom: Variant | None = None,
) -> None:
    """Print the value of a state (P(shut), expected score, ... per the variant's objective;
    in N-player games the mover's expected share of the win, or winnings).

    Example: stb-pipeline expect --variant four-player 134 --player 3 --best-score 11
    """
    from pipeline.answer.answers import one_shot

    found = one_shot(data_dir).expect(pick_one(variant, custom, data_dir), tiles, **(extra or {}))
    say(f"{found.value!r}")


@app.command("move")
@with_rules
@with_position
def move_cmd(
    tiles: Tiles,
    roll: Annotated[int, typer.Argument(help="The dice total rolled.")],
    variant: OneVariant = None,
    extra: dict[str, int] | None = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    custom: Variant | None = None,
) -> None:
    """Print the best move for a roll, its value, and what each other legal move loses.

    Example: stb-pipeline move --variant classic 12345 7
    """
    from pipeline.answer.answers import one_shot

    chosen = pick_one(variant, custom, data_dir)
    found = one_shot(data_dir).position(chosen, tiles, roll=roll, **(extra or {}))
    if found.best_move is None:
        ends = "the turn passes" if found.passes_turn else "the game ends"
        out.print(f"no legal move: {ends}, value {found.value!r}")
        return
    out.print(f"best move {found.best_move}  value {found.value!r}")
    table = fitted_table("move", "leaves", "value", "loses", fold="leaves")
    for m in found.moves:
        table.add_row(str(m.move), m.next_tiles or "(shut)", f"{m.value:.12g}", f"{m.regret:.3g}")
    out.print(table)


@app.command("variants")
def variants_cmd(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """List the registered variants (`all` builds those marked yes) and the custom rule sets
    built into the data directory.

    Example: stb-pipeline variants --data-dir data
    """
    table = fitted_table(
        "variant", "in all", "description", fold="description", **listing_options()
    )
    for v in REGISTRY.values():
        table.add_row(v.name, "yes" if v.in_all else "no", v.description)
    if data_dir.is_dir():
        from pipeline.store import directory

        for name, v in directory.of(data_dir).snapshot().customs().items():
            table.add_row(name, "no", f"{v.description}, built in {data_dir}/")
    out.print(table)


@app.command("rules")
def rules_cmd() -> None:
    """Show the custom rule options, which every command that takes --variant also accepts.

    The options define a one-player Shut the Box rule set on the spot, as in `stb-pipeline
    build --tiles 12 --dice 3`. Its variant is named after its rules (here stb-12t-3d6-shut)
    or --name; `build` prints the name, and every command accepts it as --variant.

    Example: stb-pipeline rules
    """
    from rich.markup import escape

    table = fitted_table("option", "meaning", fold="meaning", box=None)
    for name, option in CUSTOM_RULE_OPTIONS.items():
        metavar = "N" if option.kind is int else "TEXT"
        meaning = escape(option.help.removeprefix("Custom rules: "))  # "E[score]" is not markup
        table.add_row(f"--{name.replace('_', '-')} {metavar}", meaning)
    out.print(table)


register_all(app)


def command(only: str | None = None) -> Any:
    """The click command behind `app`, with help a person can read: plain metavars (FILE, N)
    instead of typer's ``<path>``/``{file}``, and Example lines that are never rewrapped.

    With ``only``, the name of a command or group, the root group holds just that one: a run of
    one command does not build the other twenty (about 0.04 s). Any other word builds them all.
    """
    source = app
    if only is not None:
        commands = [c for c in app.registered_commands if c.name == only]
        groups = [g for g in app.registered_groups if g.name == only]
        if commands or groups:
            source = copy.copy(app)
            source.registered_commands, source.registered_groups = commands, groups
    # a group even when it holds one command: `stb-pipeline NAME ...` parses as it always does
    root = typer.main.get_group(source)
    _tidy(root)
    return root


#: Metavars by annotation or click type name, for options that give none.
METAVARS: dict[Any, str] = {
    int: "N",
    float: "X",
    Path: "PATH",
    "int": "N",
    "integer": "N",
    "int range": "N",  # an int option with min or max (`serve --port`)
    "float": "X",
    "float range": "X",
    "path": "PATH",
}


def _tidy(cmd: Any) -> None:
    """Plain metavars for every parameter of ``cmd`` and its subcommands; whole examples, last."""
    if cmd.help and "\n\nExample:" in cmd.help and not cmd.epilog:
        # the example goes after the options (click's epilog), where a reader looks last and
        # copies from; "\b" keeps it on one line, as click rewraps paragraphs
        text, _, example = cmd.help.rpartition("\n\nExample:")
        cmd.help = text
        cmd.epilog = "\b\nExample:" + example.rstrip()
    for param in cmd.params:
        if _kind(param) is Path or getattr(param.type, "name", None) == "path":
            _refuse_empty(param)
        if param.metavar is None:
            if param.param_type_name == "argument":
                # typer would add "<str>" after the name: the help text says what it is (the
                # name itself stays, as error messages quote it)
                param.display_type_rich = lambda ctx: None
            elif not getattr(param, "is_flag", False):
                param.metavar = METAVARS.get(_kind(param), "TEXT")
    for sub in getattr(cmd, "commands", {}).values():
        _tidy(sub)


def _refuse_empty(param: Any) -> None:
    """An empty path (``-o ''``, ``--data-dir ''``) is a mistake, not the current directory
    (which is what ``Path('')`` means), and a name longer than any file system takes can never
    be read or written: refuse either as bad input (exit 2), for every path option and
    argument of every command."""
    kind = copy.copy(param.type)  # click may share type objects between parameters
    inner = kind.convert

    def convert(value: Any, p: Any, ctx: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            kind.fail(f"give a path, not {value!r}", p, ctx)
        if isinstance(value, str) and (problem := path_too_long(value)):
            kind.fail(problem, p, ctx)
        return inner(value, p, ctx)

    kind.convert = convert
    param.type = kind


#: The longest name of one file or folder (bytes) that Linux's file systems (ext4, XFS, btrfs),
#: APFS and NTFS take, and the longest path the kernel takes.
NAME_MAX = 255
PATH_MAX = 4096


def path_too_long(value: str) -> str:
    """Why ``value`` can be no path on this machine (a name over :data:`NAME_MAX` bytes, the
    whole over :data:`PATH_MAX`, or links that loop), shortened for a one-line error; empty
    when it can be."""
    encoded = os.fsencode(value)
    if len(encoded) > PATH_MAX:
        return f"a path of at most {PATH_MAX} bytes, not {len(encoded):,}"
    for part in Path(value).parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            shown = part if len(part) <= 20 else f"{part[:20]}..."
            return f"the name {shown!r} is {size:,} bytes long; a file system takes {NAME_MAX}"
    try:
        os.stat(value)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "its links point back at themselves (a loop)"
    except ValueError:  # a NUL byte: said by whatever reads it
        pass
    return ""


def _kind(param: Any) -> Any:
    """A parameter's type: its annotation without None, else its click type's name."""
    descriptor = getattr(param, "type_descriptor", None)  # typer sets one or the other
    if descriptor is None:
        return getattr(getattr(param, "type", None), "name", None)
    kinds = [k for k in get_args(descriptor.annotation) if k is not type(None)]
    return kinds[0] if len(kinds) == 1 else descriptor.annotation


def run(argv: list[str]) -> int:
    """Run the CLI on ``argv``; return the exit code. Errors become one line on stderr."""
    err = LazyConsole(stderr=True, highlight=False, soft_wrap=True)  # rich loads on an error only

    def fail(message: str, code: int) -> int:
        err.print(f"error: {message}", markup=False)
        return code

    from pipeline import progress

    progress.set_quiet(bool(os.environ.get("STB_QUIET", "") not in ("", "0")))
    try:
        root = command(argv[0] if argv else None)
        result = root.main(args=argv, prog_name="stb-pipeline", standalone_mode=False)
    except PipelineError as exc:
        missing = isinstance(exc, TablesMissingError)
        where = _where_tables_are(argv) if missing else ""
        return fail(f"{where}{exc}", exc.exit_code)
    except typer.TyperException as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            err.print(ctx.get_help(), markup=False)
            return 2
        return fail(f"{exc.format_message()}{_extra_hint(argv)} (see --help)", 2)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return fail("aborted", 130)
    except KeyboardInterrupt:
        return fail(INTERRUPTED, 130)
    except BrokenPipeError:
        raise  # the reader of stdout went away: main() ends quietly
    except MemoryError:  # numpy's and pyarrow's out-of-memory errors are MemoryErrors too
        return fail(OUT_OF_MEMORY, 1)
    except Exception as exc:
        if os.environ.get("STB_DEBUG"):
            raise
        from pipeline.games.registry import plugin_at_fault

        plugin = plugin_at_fault(exc)
        if plugin is not None:  # an installed family's code failed, not the pipeline's
            first = (str(exc).splitlines() or [""])[0][:200]
            return fail(f"{plugin} failed: {type(exc).__name__}: {first}", 1)
        # Every failure a user can cause is a PipelineError; reaching here is a bug (the bad-input
        # tests fail on it). Still one line, so that scripts reading stderr are not flooded.
        first = str(exc).splitlines()[0] if str(exc) else ""
        return fail(
            f"internal error {type(exc).__name__}: {first} (a bug: please report it; "
            "STB_DEBUG=1 shows the traceback)",
            1,
        )
    code = result if isinstance(result, int) else 0
    if code == 130:  # typer turns Ctrl-C into this code without a word
        fail(INTERRUPTED, code)
    return code


def _extra_hint(argv: list[str]) -> str:
    """For a word left over after ``--variant NAME`` (``--variant classic lever``): how to
    give several variants."""
    for i, word in enumerate(argv[2:], 2):
        if argv[i - 2] in ("--variant", "-v") and not word.startswith("-"):
            return f"; several variants are one word with commas: --variant {argv[i - 1]},{word}"
    return ""


def _where_tables_are(argv: list[str]) -> str:
    """What "not built" leads with when the data directory a command read holds no table at
    all (most likely it ran from another folder than the one built into): which folder, and
    the option that names the right one, first, where a person reads."""
    data_dir = DEFAULT_DATA_DIR
    for i, word in enumerate(argv):
        if word in ("--data-dir", "-d") and i + 1 < len(argv):
            data_dir = Path(argv[i + 1])
        elif word.startswith("--data-dir="):
            data_dir = Path(word.split("=", 1)[1])
    from pipeline.store.layout import built_elsewhere

    hint = built_elsewhere(data_dir, "--data-dir DIR, or STB_DATA_DIR=DIR,")
    return f"{hint}: " if hint else ""


OUT_OF_MEMORY = (
    "out of memory; every table on disk is as it was (build fewer variants at once, or use a "
    "machine with more memory)"
)


def main() -> None:
    """The full command's entry point (the console script's door, :mod:`pipeline.cli.lean`,
    answers a one-shot `expect` before it)."""
    from pipeline.cli.signals import catch_signals

    catch_signals()
    exit_with(lambda: run(sys.argv[1:]))


if __name__ == "__main__":
    main()
