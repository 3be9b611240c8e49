"""The `stb-pipeline` console script's door: a one-shot `expect` answered before the command line
loads.

`stb-pipeline expect [-v NAME] [-d DIR] TILES` of a tile game is answered here from the values
its build keeps beside the states file (:mod:`pipeline.store.lookup`), with the standard library,
the registry and the tile codec only: no numpy, DuckDB, pyarrow, polars, typer or rich (about a
fifth of the full command's CPU). Anything else, and anything this door is not sure of, runs the
full command (:func:`pipeline.cli.app.run`) in the same process, which then says what it always
says: any other command or option (``--help``, the N-player position options, custom rule
options, a repeated option, ``--``), a variant that is not a registered or rules-named tile game
of the built-in families, tiles the codec refuses, and a lookup that is missing, stale, damaged
or without a finite value for the state. So the output, errors and exit codes are the full
command's by construction; the tests compare the two on every variant.
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
    try:
        return _lookup(*asked)
    except Exception:  # whatever went wrong is said by the full command, as it always was
        return None


def parse(argv: list[str]) -> tuple[str | None, str | None, str] | None:
    """(variant, data directory, tiles) of ``expect [-v NAME] [-d DIR] TILES`` in any order, as
    click reads them; None for anything else (the full command parses it)."""
    if not argv or argv[0] != "expect":
        return None
    given: dict[str, str] = {}
    tiles: str | None = None
    words = iter(argv[1:])
    for word in words:
        if word.startswith("--") and "=" in word:
            option, value = word.split("=", 1)
        elif word in OPTIONS:
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
        key = OPTIONS.get(option)
        if key is None or key in given or value.startswith("-"):
            return None
        given[key] = value
    if tiles is None:
        return None
    return given.get("variant"), given.get("data_dir"), tiles


def _lookup(name: str | None, data_dir: str | None, tiles: str) -> float | None:
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
    if type(variant.codec) is not TileCodec:
        return None
    state_id = variant.codec.parse(tiles)
    return lookup.value(os.path.realpath(data_dir), variant.name, state_id)
