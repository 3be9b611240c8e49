"""The `stb-pipeline` console script's door: a one-shot `expect` answered before the command line
loads.

`stb-pipeline expect [-v NAME] [-d DIR] [--player N ...] TILES` of a tile game (registered, or a
box named by its rules), of Double Shutter, of an N-player game or of a registered Knucklebones
board ("MOVER;OPPONENT") is answered here from the values its build keeps beside the states
file (:mod:`pipeline.store.lookup`), with the standard library, the map of position options
(:data:`pipeline.apps.server.POSITION_OPTIONS`), the registry, the tile codec and the family's
own reader of positions (``Variant.reader``: its codec or ``Variant.parser``, the one its game's
``parse_state`` uses) only: no numpy, DuckDB, pyarrow, polars, typer or rich
(about a fifth of the full command's CPU; a tenth of Knucklebones'). Anything else, and
anything this door is not sure of, runs the full command (:func:`pipeline.cli.app.run`) in the
same process, which then says what it always says: any other command or option (``--help``,
custom rule options, a repeated option, ``--``, a number not in ASCII digits), a variant that
is not such a game of the built-in families, a position refused, and a lookup that is missing,
stale, damaged or without a finite value for the state. So the output, errors and exit codes
are the full command's by construction; the tests compare the two on every variant.
"""

from __future__ import annotations

import os
import sys

#: The options this door reads (each with a value); any other word starting with "-" is the
#: full command's.
OPTIONS = {"-v": "variant", "--variant": "variant", "-d": "data_dir", "--data-dir": "data_dir"}


def main() -> None:
    """Console-script entry point (:func:`pipeline.cli.app.main` without this door)."""
    from pipeline.cli.signals import catch_signals

    catch_signals()
    from pipeline.errors import exit_with

    exit_with(lambda: run(sys.argv[1:]))


def run(argv: list[str]) -> int:
    """Answer ``argv`` here when it is a one-shot `expect` this door can vouch for, else run the
    full command; the exit code."""
    from pipeline.errors import INTERRUPTED

    try:
        found = answer(argv)
    except KeyboardInterrupt:
        print(f"error: {INTERRUPTED}", file=sys.stderr)
        return 130
    if found is None:
        from pipeline.cli.app import run as full

        return full(argv)
    print(repr(found))  # as `expect` prints it (pipeline.cli.options.say)
    return 0


def answer(argv: list[str]) -> float | None:
    """The value `expect` would print for ``argv``, or None where the full command answers."""
    asked = parse(argv)
    if asked is None:
        return None
    name, data_dir, tiles, extra = asked
    try:
        return _lookup(name, data_dir, tiles, extra)
    except Exception:  # whatever went wrong is said by the full command, as it always was
        return None


def parse(argv: list[str]) -> tuple[str | None, str | None, str, dict[str, int]] | None:
    """(variant, data directory, tiles, the position's other parts) of ``expect [-v NAME]
    [-d DIR] [--player N ...] TILES`` in any order, as click reads them; None for anything else
    (the full command parses it)."""
    if not argv or argv[0] != "expect":
        return None
    # the options of a position beyond its tiles (pipeline.cli.options.POSITION_OPTIONS: whole
    # numbers), read here where written in ASCII digits (anything else: the full command's)
    from pipeline.apps.server import POSITION_OPTIONS as POSITION

    given: dict[str, str] = {}
    tiles: str | None = None
    words = iter(argv[1:])
    for word in words:
        if word.startswith("--") and "=" in word:
            option, value = word.split("=", 1)
        elif word in OPTIONS or word in POSITION:
            option, value = word, next(words, None)  # type: ignore[assignment]
            if value is None:
                return None
        elif word.startswith("-"):
            return None  # help, another option, "--", "-"
        else:
            if tiles is not None:
                return None
            tiles = word
            continue
        key = OPTIONS.get(option) or POSITION.get(option)
        if key is None or key in given or value.startswith("-"):
            return None
        if key in POSITION.values() and not (value.isascii() and value.isdigit()):
            return None  # (click reads "+1", " 1", "1_0" and other digits too: its words)
        given[key] = value
    if tiles is None:
        return None
    extra = {key: int(given[key]) for key in POSITION.values() if key in given}
    return given.get("variant"), given.get("data_dir"), tiles, extra


def _lookup(
    name: str | None, data_dir: str | None, tiles: str, extra: dict[str, int]
) -> float | None:
    """The answer from the lookup; None where the full command must answer."""
    from pipeline.games.registry import FAMILIES, PLUGIN_OF, REGISTRY, select_one
    from pipeline.games.tiles import TileCodec
    from pipeline.store import lookup

    if data_dir is None:
        data_dir = os.environ.get("STB_DATA_DIR") or "data"  # options.DEFAULT_DATA_DIR
    elif not data_dir.strip():
        return None  # refused as a path by the full command
    # (a name resolved as the full command resolves one that is registered or names its rules;
    # one built under its own name is the full command's)
    if name is not None and name not in REGISTRY._load(plugins=False):
        from pipeline import progress  # an installed family's warning: quiet as run() makes it

        progress.set_quiet(os.environ.get("STB_QUIET", "") not in ("", "0"))
    variant = select_one(name, None, {})
    if variant.family not in FAMILIES or variant.name in PLUGIN_OF:
        return None  # an installed family's: its game is made (and may fail) before an answer
    if not getattr(variant.make, "__module__", "").startswith("pipeline.games."):
        return None
    if variant.codec is not None and type(variant.codec) is not TileCodec:
        return None
    if variant.codec is None and not getattr(variant.parser, "__module__", "").startswith(
        "pipeline.games."
    ):
        return None  # no reader without the game, or not a built-in family's
    read = variant.reader()  # (the reader the game's parse_state uses)
    if read is None:
        return None
    return lookup.value(os.path.realpath(data_dir), variant.name, read(tiles, **extra))
