"""Options and helpers shared by every `stb-pipeline` command (no command lives here)."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from pipeline.errors import UsageError
from pipeline.games.registry import Variant, select_one, select_variants
from pipeline.games.rule_options import CUSTOM_RULE_OPTIONS, variant_from_options
from pipeline.games.tiles import position_extra

if TYPE_CHECKING:
    from rich.console import Console


class LazyConsole:
    """A rich ``Console(**options)``, made on first use: a command that prints no table loads no
    rich (about 0.05 s of start-up). ``width``, when given, is asked on every use (a terminal
    can be resized, and one process may run many commands). Emoji codes are never read: text
    a user gave (``--variant ':x:'``) is printed as given, whatever prints it."""

    def __init__(self, width: Callable[[], int] | None = None, **options: Any) -> None:
        self._width = width
        self._options = {"emoji": False, **options}
        self._console: Any = None

    def real(self) -> Console:
        """The Console itself (made now if not yet)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        if self._width is not None:
            self._console.width = self._width()
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def _width() -> int:
    """The width tables are drawn for: ``$COLUMNS`` when set, else the terminal's width on a
    terminal; elsewhere (a pipe, a file) room for any table, since nothing would wrap it. Tables
    fit it by folding their long text columns (:func:`fitted_table`), never by squeezing."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= MIN_WIDTH:
        return int(columns)
    try:
        if sys.stdout.isatty():
            return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH)
    except (OSError, ValueError, AttributeError):  # no terminal, or stdout closed
        pass
    return 1000


#: The narrowest width a table is drawn for.
MIN_WIDTH = 40

out = LazyConsole(_width, highlight=False, soft_wrap=True)


def fitted_table(
    *headers: str,
    fold: str | tuple[str, ...] | None = None,
    right: tuple[str, ...] = (),
    **options: Any,
) -> Any:
    """A rich Table that stays readable on a narrow terminal: every column keeps its cells on
    one line and is never narrower than its header, except ``fold`` (a description, a name, or
    several such columns), which folds onto more lines to make the table fit. ``right``:
    right-justified columns."""
    from rich.table import Table

    folding = (fold,) if isinstance(fold, str) else fold or ()
    table = Table(**options)
    for header in headers:
        table.add_column(
            header,
            justify="right" if header in right else "left",
            no_wrap=header not in folding,
            overflow="fold",
            min_width=len(header),
        )
    return table


#: Below this width a listing (`variants`, `query --list`) is drawn without borders: on an
#: 80-column terminal its long descriptions then take a sixth fewer lines.
BORDERLESS_BELOW = 100


def listing_options() -> dict[str, Any]:
    """The Table options of a listing on this terminal (see :data:`BORDERLESS_BELOW`)."""
    if out.width >= BORDERLESS_BELOW:
        return {}
    from rich import box

    return {"box": box.SIMPLE_HEAD, "show_edge": False}


def say(line: str) -> None:
    """Print one plain line (a number, a name) as ``out.print`` would, without loading rich."""
    print(line)


DEFAULT_DATA_DIR = Path(os.environ.get("STB_DATA_DIR") or "data")  # set but empty: the default
#: A position's open tiles, the argument of `expect` and `move`.
Tiles = Annotated[
    str,
    typer.Argument(
        help="Open tiles, increasing, e.g. 12345 (or 1,2,10). Double Shutter: 000000000 "
        "or 'front=1234 back=6789'."
    ),
]
DataDir = Annotated[
    Path, typer.Option("--data-dir", "-d", metavar="DIR", help="Directory of the Parquet tables.")
]
#: The --force of a command that writes one file where -o names (`query`, the Knucklebones
#: artefacts): said once, so that every such command means the same by it.
ForceOutput = Annotated[
    bool, typer.Option("--force", help="Replace the --output file if it exists.")
]
OneVariant = Annotated[
    str | None,
    typer.Option(
        "--variant",
        "-v",
        metavar="NAME",
        help="Variant name (see `stb-pipeline variants`; default classic), or custom with rule "
        "options.",
    ),
]
#: The options of a position beyond its open tiles (:func:`pipeline.games.tiles.position_extra`
#: names the same four); added to `expect` and `move` by @with_position.
POSITION_OPTIONS = {
    "p1_score": typer.Option("--p1-score", help="Player 1's score (two-player game, P2 states)."),
    "player": typer.Option("--player", help="N-player games: the seat to move, 1..N (default 1)."),
    "best_score": typer.Option(
        "--best-score", help="N-player games: the best (lowest) score so far."
    ),
    "best_count": typer.Option(
        "--best-count", help="N-player games: how many players share it (default 1)."
    ),
}


def in_place_of(
    fn: Callable[..., Any],
    name: str,
    options: dict[str, inspect.Parameter],
    make: Callable[..., Any],
) -> Callable[..., Any]:
    """``fn`` with the parameters ``options`` where its parameter ``name`` stands (typer reads
    the signature, so they keep that place in its help); it receives ``make`` of their values
    (by the keys of ``options``) as ``name``."""
    sig = inspect.signature(fn)
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        params += list(options.values()) if p.name == name else [p]

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        kwargs[name] = make(**{key: kwargs.pop(p.name) for key, p in options.items()})
        return fn(**kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def with_position(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Put the options of :data:`POSITION_OPTIONS` where a command's ``extra`` parameter stands
    (so that they keep that place in its help); it receives them as ``extra``, the dict of those
    given (:func:`pipeline.games.tiles.position_extra`), as the answers take them."""
    options = {
        name: inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=Annotated[int | None, option],
        )
        for name, option in POSITION_OPTIONS.items()
    }
    return in_place_of(fn, "extra", options, position_extra)


def with_rules(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the custom rule options to a command, where its ``custom`` parameter stands (last);
    it receives them as ``custom: Variant | None``."""
    options = {
        name: inspect.Parameter(
            f"rule_{name}",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                option.kind | None,
                # hidden: shown once, by `stb-pipeline rules`, not on every command's help
                typer.Option(f"--{name.replace('_', '-')}", help=option.help, hidden=True),
            ],
        )
        for name, option in CUSTOM_RULE_OPTIONS.items()
    }
    return in_place_of(fn, "custom", options, lambda **values: variant_from_options(values))


ManyVariants = Annotated[
    list[str],
    typer.Option(
        "--variant",
        "-v",
        metavar="NAME",
        help="Variant names (repeat or comma-separate) or all (the default).",
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


def _quiet(value: bool) -> bool:
    """Option callback: silence progress for this run."""
    if value:
        from pipeline import progress

        progress.set_quiet(True)
    return value


Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress lines on stderr (also: STB_QUIET=1).", callback=_quiet
    ),
]


T = TypeVar("T")


def pick_variants(
    names: list[str], custom: Variant | None, data_dir: Path | None = None
) -> list[Variant]:
    """The variants a command acts on (see :func:`pipeline.games.registry.select_variants`);
    a name not registered may be a custom variant built into ``data_dir``."""
    return _with_built(lambda built: select_variants(names, custom, built), data_dir)


def pick_one(name: str | None, custom: Variant | None, data_dir: Path | None = None) -> Variant:
    """The single variant a question is about (none named: classic), registered, named by its
    rules (``stb-12t-3d6-shut``) or built into ``data_dir`` under its own name."""
    return _with_built(lambda built: select_one(name, custom, built), data_dir)


def _with_built(select: Callable[[dict[str, Variant]], T], data_dir: Path | None) -> T:
    """``select`` of the registered names; where that fails, of those and the custom
    variants built into ``data_dir`` too (what its snapshot says: :mod:`pipeline.store.directory`,
    read only then)."""
    try:
        return select({})
    except UsageError:
        if data_dir is None or not data_dir.is_dir():
            raise
        from pipeline.store import directory

        built = directory.of(data_dir).snapshot().customs()
        if not built:
            raise
        return select(built)
