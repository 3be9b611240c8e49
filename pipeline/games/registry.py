"""The registry of named variants: each name maps to a game (its rules) built on demand.

Game families live in sub-packages of :mod:`pipeline.games` and register their own variants in
their ``variants`` module; the registry imports those modules the first time a variant is looked
up, so that importing it (or running ``stb-pipeline --help``) loads no game. Nothing outside
``pipeline.games`` (and the game-specific ``pipeline.apps``) names a particular game.

Those lookups, by name with :func:`importlib.import_module`, are the only way the shared modules
of ``pipeline.games`` reach a family (``tests/test_architecture.py`` holds the rest to it): the
registry names the families (:data:`FAMILIES`) so that the families need not be imported to be
listed, and each family hands the registry what it reads (variants, names, recorded rules and
rule options) when it loads.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pipeline.errors import PipelineError, PluginError, UnknownVariantError, UsageError

if TYPE_CHECKING:
    from pipeline.games.base import Game
    from pipeline.games.tiles import TileCodec

#: Sub-packages of pipeline.games whose ``variants`` module registers named variants.
FAMILIES: tuple[str, ...] = ("shutbox", "nplayer", "double_shutter", "knucklebones")
#: The entry point group through which an installed package adds a game family, as pytest and
#: Datasette find their plugins: each entry point names the module that registers the family's
#: variants (what a built-in family's ``variants`` module is), loaded as theirs are.
ENTRY_POINTS = "stb_pipeline.families"


@dataclass(frozen=True)
class Variant:
    """A named game: how to build it, a one-line description, and whether `all` includes it."""

    name: str
    description: str
    make: Callable[[], Game]
    in_all: bool = True
    #: The game family (sub-package of pipeline.games) the variant belongs to.
    family: str = ""
    #: Whether its tables live in files of their own (variants/<name>/), so that building it
    #: rewrites no other variant's rows and rebuilding another never rewrites its (large) rows.
    separate: bool = False
    #: The game's state codec when it needs no game object (tile games: a TileCodec). Lets a
    #: lookup on built tables parse its argument, and describe masks, without the game.
    codec: TileCodec | None = None
    #: Players in turn (the N-player games); known without making the game, so that a command
    #: checks a seat before loading anything.
    players: int = 1
    #: A game of boards answered by a die and a column (Knucklebones): makes the board rules an
    #: answer needs (:class:`pipeline.games.knucklebones.columns.BoardRules`) without the game's
    #: solver (no numba for an answer from tables); None for the other games.
    board: Callable[[], Any] | None = None
    #: How a position is drawn and asked (the answer's kind): ``tiles`` (a row of tiles, a roll
    #: and the tiles shut), ``rows`` (Double Shutter's two rows), ``boards`` (a board and a die,
    #: the column placed); a family of another shape declares its own.
    view: str = "tiles"
    #: Makes the reader of a position as the user writes it (the text and an N-player game's
    #: ``player``, ``best_score``, ``best_count``, ``p1_score``) into its state id, with the
    #: standard library only, for a game whose positions are not a row of tiles (``codec``):
    #: the game's ``parse_state`` reads with the same one, and a one-shot `expect` reads with
    #: it without making the game (:mod:`pipeline.cli.lean`). None: the game reads them.
    parser: Callable[[], Callable[..., int]] | None = None
    #: Whether `build` makes its tables on any machine (the full Knucklebones game needs a GPU,
    #: so a page offers its search instead of a command).
    builds_anywhere: bool = True

    def reader(self) -> Callable[..., int] | None:
        """The reader of a position as the user writes it (the text and its options, see
        :attr:`parser`) into its state id without making the game: the codec's or the
        parser's; None where only the game reads it."""
        if self.codec is not None:
            return self.codec.parse
        if self.parser is not None:
            return self.parser()
        return None

    def parse_state(self, text: str, **extra: object) -> int:
        """The canonical state id of a state written as the user writes it."""
        read = self.reader()
        if read is None:
            return self.make().parse_state(text, **extra)
        return read(text, **extra)


class _Registry(Mapping[str, Variant]):
    """Name -> variant, filled from every family's ``variants`` module on first use."""

    def __init__(self) -> None:
        self._items: dict[str, Variant] = {}
        self._loaded = False
        self._plugins = False
        #: The plugin being imported (its label), while :meth:`_load_plugin` runs.
        self._plugin: str | None = None

    def _load(self, plugins: bool = True) -> dict[str, Variant]:
        """Every family's variants: the built-in ones, then (``plugins``) the installed ones.
        A lookup of a built-in name reads no package metadata (a few hundredths of a second
        of every command's start)."""
        if not self._loaded:
            self._loaded = True
            for family in FAMILIES:
                importlib.import_module(f"pipeline.games.{family}.variants")
        if plugins and not self._plugins:
            self._plugins = True
            for entry in plugin_entry_points():
                self._load_plugin(entry)
        return self._items

    def _load_plugin(self, entry: Any) -> None:
        """Import one installed family (an entry point) and keep what it registers; where its
        import fails in any way (raises, calls ``sys.exit``, registers garbage or a name taken)
        everything it registered is taken back and one warning names it: a broken plugin never
        breaks a built-in command."""
        kept = (dict(self._items), list(NAME_READERS), dict(RULE_READERS), dict(OPTION_READERS))
        self._plugin = plugin_label(entry)
        try:
            with _ctrl_c_told_apart() as pressed:
                try:
                    entry.load()
                except KeyboardInterrupt:
                    if pressed:  # a person pressed Ctrl-C: the command stops
                        raise
                    raise _Refused("it raised KeyboardInterrupt") from None
        except (Exception, SystemExit) as exc:
            self._items = kept[0]
            NAME_READERS[:] = kept[1]
            _restore(RULE_READERS, kept[2])
            _restore(OPTION_READERS, kept[3])
            from pipeline import progress

            progress.warn(f"{self._plugin} skipped: {_reason(exc)}")
        else:
            for name in set(self._items) - set(kept[0]):
                PLUGIN_OF[name] = self._plugin
            package = entry.module.split(".")[0]
            if package != "pipeline":
                PLUGIN_PACKAGES[package] = self._plugin
        finally:
            self._plugin = None

    def add(self, variant: Variant) -> None:
        if self._plugin is not None:
            variant = _checked_plugin_variant(variant, self._plugin, self._items)
        if variant.name in self._items:
            raise ValueError(f"variant {variant.name!r} is registered twice")
        self._items[variant.name] = variant

    def __getitem__(self, name: str) -> Variant:
        found = self._load(plugins=False).get(name)
        return found if found is not None else self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


REGISTRY = _Registry()


def plugin_entry_points() -> list[Any]:
    """The entry points of the families installed packages add (:data:`ENTRY_POINTS`), each
    once, in order of name; none where the package metadata cannot be read."""
    if not _may_declare_plugins():
        return []  # (what importlib.metadata would find, without its scan: 0.05 to 0.17 s)
    from importlib.metadata import entry_points

    try:
        found = list(entry_points(group=ENTRY_POINTS))
    except Exception as exc:  # a damaged .dist-info of some package
        from pipeline import progress

        progress.warn(f"installed plugins not read: {_reason(exc)}")
        return []
    unique = {(ep.name, ep.value): ep for ep in found}
    return [unique[key] for key in sorted(unique)]


def _may_declare_plugins() -> bool:
    """False only where :func:`importlib.metadata.entry_points` certainly finds no entry point
    of :data:`ENTRY_POINTS` and raises nothing (True: read them).

    It reads what that scan reads (each folder on ``sys.path``, its ``*.dist-info`` and
    ``*.egg-info`` folders' ``entry_points.txt``) with the standard library only, and is sure
    only when no such file names the group, each decodes and each line of a section is
    ``name = value`` (what the scan would fail to parse, and warn of); anything else it does
    not read alike (a distribution finder besides the path's, a zip or ``.egg`` on the path, a
    folder it cannot list, an info folder without a name) means True."""
    import sys
    from importlib.machinery import PathFinder

    if any(
        getattr(finder, "find_distributions", None) is not None and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return True
    group = ENTRY_POINTS.encode()
    for entry in sys.path:
        if not isinstance(entry, str) or entry.lower().endswith(".egg"):
            return True
        try:
            children = os.listdir(entry or ".")
        except FileNotFoundError:
            continue  # (a zip that is not there either: the scan finds nothing in it)
        except OSError:
            return True
        for child in children:
            if not child.lower().endswith((".dist-info", ".egg-info")):
                continue
            if not child.endswith((".dist-info", ".egg-info")) or not child.partition("-")[0]:
                return True  # named from its metadata by the scan, not from its folder
            if _declares(os.path.join(entry or ".", child, "entry_points.txt"), group):
                return True
    return False


def _declares(path: str, group: bytes) -> bool:
    """Whether the entry points file ``path`` may declare ``group`` or fail to parse (False:
    it is missing, unreadable as the scan skips it, or well formed without the group)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return False  # what the scan reads as no entry points
    except OSError:
        return True
    if group in raw:
        return True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    section = False
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = True
        elif section and "=" not in line:
            return True
    return False


def plugin_label(entry: Any) -> str:
    """How a warning or an error names a plugin: its entry point, as its package declares it."""
    return f"plugin {entry.name!r} (entry point {ENTRY_POINTS}: {entry.name} = {entry.value})"


#: Variant name -> the label of the plugin that registered it (built-in variants are absent).
PLUGIN_OF: dict[str, str] = {}
#: Top-level package of each plugin loaded -> its label (:func:`plugin_at_fault`).
PLUGIN_PACKAGES: dict[str, str] = {}


class _Refused(ValueError):
    """What a plugin registered that the registry does not take (the plugin is skipped)."""


def plugin_at_fault(exc: BaseException) -> str | None:
    """The label of the loaded plugin whose code raised ``exc`` (a frame of its traceback runs
    in the plugin's package), or None: an error of a plugin's game is said as the plugin's,
    not as an internal error of the pipeline."""
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        found = PLUGIN_PACKAGES.get(module.split(".")[0])
        if found is not None:
            return found
        tb = tb.tb_next
    return None


#: Longest variant name a plugin may register (what a data directory's snapshot accepts).
MAX_PLUGIN_NAME = 100


@contextlib.contextmanager
def _ctrl_c_told_apart() -> Iterator[list[bool]]:
    """A list that holds True once Ctrl-C (SIGINT) arrives within the block: a plugin that
    raises KeyboardInterrupt itself is then told apart from a person stopping the command
    (only in the main thread, where signal handlers live; elsewhere it stays empty)."""
    import signal
    import threading

    pressed: list[bool] = []
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is None  # a handler not set from Python: left alone
    ):
        yield pressed
        return

    def handler(signum: int, frame: object) -> None:
        pressed.append(True)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def _reason(exc: BaseException) -> str:
    """An exception as a few words on one line."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    if isinstance(exc, _Refused):
        return str(exc)
    text = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _restore(target: dict, kept: dict) -> None:
    """Put a dict of readers back as it was (in place: other modules hold it)."""
    target.clear()
    target.update(kept)


def _checked_plugin_variant(variant: Any, plugin: str, taken: Mapping[str, Variant]) -> Variant:
    """A variant a plugin registers, checked (a Variant, a usable name, not one a built-in
    variant or rule set already answers to) and with its ``make`` checked in turn; _Refused
    (the plugin is skipped) otherwise."""
    if not isinstance(variant, Variant):
        shown = str(variant)[:40]
        raise _Refused(f"it registered {type(variant).__name__} {shown!r}, not a Variant")
    name = variant.name
    if not isinstance(name, str) or not _usable_name(name):
        raise _Refused(f"it registered a variant named {str(name)[:40]!r}")
    if name in taken or name in ("all", "custom") or _read_as_built_in(name):
        raise _Refused(f"it registered {name!r}, the name of a built-in variant")
    if not callable(variant.make) or not isinstance(variant.view, str):
        raise _Refused(f"its variant {name!r} has no make() or no view")
    return replace(variant, make=_checked_make(variant.make, name, plugin))


def _usable_name(name: str) -> bool:
    """Whether a plugin's variant name can be typed and stored: printable ASCII without
    spaces, commas or slashes, at most :data:`MAX_PLUGIN_NAME` characters."""
    return (
        0 < len(name) <= MAX_PLUGIN_NAME
        and name.isascii()
        and name.isprintable()
        and not any(c in name for c in " ,/\\")
    )


def _read_as_built_in(name: str) -> bool:
    """Whether a built-in family reads ``name`` as one of its rule sets (``stb-12t-3d6-shut``)."""
    for reader in NAME_READERS:
        try:
            if reader(name) is not None:
                return True
        except Exception:  # a reader that cannot read a name does not claim it
            continue
    return False


def _checked_make(make: Callable[[], Any], name: str, plugin: str) -> Callable[[], Game]:
    """A plugin variant's ``make``, whose failure or garbage is a PluginError naming the plugin
    (one line, exit 1) rather than an error deep inside the pipeline."""

    def checked() -> Game:
        from pipeline.games.base import Game

        try:
            game = make()
        except PipelineError:
            raise
        except Exception as exc:
            raise PluginError(f"{plugin}: making {name!r} failed: {_reason(exc)}") from None
        if not isinstance(game, Game):
            raise PluginError(
                f"{plugin}: making {name!r} gave {type(game).__name__}, not a game "
                "(pipeline.games.base.Game)"
            )
        return game

    return checked


#: Readers of names that are not registered: a family turns such a name (a custom rule set named
#: after its rules, e.g. ``stb-12t-3d6-shut``) into its variant, or returns None.
NAME_READERS: list[Callable[[str], Variant | None]] = []
#: ``rules["game"]`` -> a function turning (name, recorded rules) back into the variant, so that a
#: custom variant built under any name can be named again (see pipeline.store.manifest).
RULE_READERS: dict[str, Callable[[str, dict], Variant]] = {}
#: family -> a function turning the custom rule options given (checked as far as every family
#: reads them alike, ``name`` apart) and the name asked for into the variant: how
#: :func:`pipeline.games.rule_options.variant_from_options` hands options to their family.
OPTION_READERS: dict[str, Callable[[dict[str, Any], str | None], Variant]] = {}


def variant_from_rules(name: str, rules: dict) -> Variant | None:
    """The variant called ``name`` with the recorded ``rules`` (None: no family reads them)."""
    REGISTRY._load(plugins=False)  # the families register their readers when they load
    game = str(rules.get("game"))
    if game not in RULE_READERS:
        REGISTRY._load()  # an installed family's, perhaps
    reader = RULE_READERS.get(game)
    return None if reader is None else reader(name, rules)


def option_reader(family: str) -> Callable[[dict[str, Any], str | None], Variant]:
    """The reader of ``family``'s custom rule options (:data:`OPTION_READERS`)."""
    REGISTRY._load()  # the families register their readers when they load
    return OPTION_READERS[family]


def register(variant: Variant) -> Variant:
    """Add a variant to the registry (names are unique). Called by the families' modules."""
    REGISTRY.add(variant)
    return variant


def get_variant(name: str) -> Variant:
    """The registered variant called ``name``; UsageError naming the known ones otherwise."""
    return lookup(name, {})


def lookup(name: str, built: Mapping[str, Variant]) -> Variant:
    """A registered variant, a custom rule set named by its rules, or one of ``built``."""
    if name in REGISTRY:
        return REGISTRY[name]
    for reader in NAME_READERS:
        found = reader(name)
        if found is not None:
            return found
    if name in built:
        return built[name]
    import difflib

    close = difflib.get_close_matches(name, [*REGISTRY, *built, "all"], n=3, cutoff=0.75)
    if close:
        guess = " or ".join(close)
        raise UnknownVariantError(
            f"unknown variant {name!r}; did you mean {guess}? (stb-pipeline variants lists them)"
        )
    known = ", ".join(sorted(REGISTRY))
    raise UnknownVariantError(
        f"unknown variant {name!r}; known variants: {known}, all, and custom rule sets "
        "(stb-pipeline rules)"
    )


def resolve(names: list[str], built: Mapping[str, Variant] | None = None) -> list[Variant]:
    """Variants named on the command line; ``all`` expands to every variant marked in_all.

    ``built`` holds custom variants found in a data directory, named as they were built.
    """
    out: list[Variant] = []
    for name in names:
        if name == "all":
            found = [v for v in REGISTRY.values() if v.in_all]
        else:
            found = [lookup(name, built or {})]
        out.extend(v for v in found if v not in out)
    return out


def check_custom_name(label: str) -> None:
    """Refuse a custom variant name that a registered variant (or `all`) already uses."""
    if label in REGISTRY or label == "all":
        raise UsageError(f"custom variant name {label!r} is taken by a registered variant")


def split_names(values: list[str], option: str = "--variant") -> list[str]:
    """Names given as repeated and comma-separated options (``-v a,b -v c``), spaces trimmed.

    An empty name (``''``, ``','``, ``'a,,b'``) is a UsageError: it is a mistake, not "all".
    """
    out: list[str] = []
    for value in values:
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):
            raise UsageError(f"{option} {value!r}: give names separated by commas, with none empty")
        out.extend(parts)
    return out


def select_variants(
    names: list[str], custom: Variant | None, built: Mapping[str, Variant] | None = None
) -> list[Variant]:
    """The variants a command acts on: the custom rule set, or the named ones (none: all)."""
    flat = split_names(names)
    if custom is not None:
        if any(n != "custom" for n in flat):
            raise UsageError("give either --variant NAME or custom rule options, not both")
        return [custom]
    if "custom" in flat:
        raise UsageError("--variant custom needs rule options such as --tiles 12")
    return resolve(flat or ["all"], built)


def select_one(
    name: str | None, custom: Variant | None, built: Mapping[str, Variant] | None = None
) -> Variant:
    """The single variant a question is about (none named: classic; an empty name is a mistake,
    not the default)."""
    if name is not None and not name.strip():
        raise UsageError(f"--variant {name!r}: give a variant name (or leave --variant out)")
    if custom is not None:
        return select_variants([name or "custom"], custom)[0]
    if name == "all":
        raise UsageError("name one variant, not all")
    return lookup(name or "classic", built or {})
