"""What a data directory holds, read in one place; the one rule that says a file read before is
still the one on disk; and the one way a variant's name resolves.

**Freshness, one rule.** A :class:`Look` at the directory is every table file's signature
(inode, time and size: a commit renames new files in, a file cut or replaced in place changes
too) and the sha256 ``manifest.json`` records for each. Whatever was read from a file (the
snapshot's rules, the index's value arrays of :mod:`pipeline.store.states`) is kept while the
current look gives the file the version it was read at. Where a watcher runs
(:meth:`Directory.watch`: `serve` starts one, a thread that looks every half second) the look
is taken off the request path, so an answer compares nothing on disk and a build that finishes
while the server runs is seen within a second; elsewhere a file's version is looked at when it
is asked (its signature and the manifest's sha256: two stats), and the whole look at most once
a second (:data:`RESCAN_S`). A commit made by this process is seen at once (:func:`changed`).

**What is built.** A :class:`Snapshot` says it: every built variant (the rules its tables
record, the file holding each of its tables), those whose tables are damaged (why), and every
registered variant that is not built, with the command that builds it. It is read from the
``stb.rules`` metadata of the table files only (:func:`pipeline.store.footers.footer`: a few KB
each, kept while the file is the same), never by scanning rows, and taken again when the look
changes.

:meth:`Directory.resolve` names a variant for every face, the command line, the Python API and
the server alike: a registered name, a custom rule set named by its rules
(``stb-12t-3d6-shut``), or a rule set built here under its own name (``build --name my-rules``
and then ``--variant my-rules``, ``pipeline.expect("my-rules")``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError, TableError, UnknownVariantError, UsageError
from pipeline.games.registry import REGISTRY, Variant, lookup, variant_from_rules
from pipeline.store import manifest
from pipeline.store.footers import file_rules, maybe_signature, signature
from pipeline.store.layout import OWN_DIR, settle, table_files
from pipeline.store.listing import unreadable
from pipeline.store.manifest import manifest_path

#: The tables whose files say what is built (states is what makes a variant "built").
TABLES = ("states", "policy", "moves", "edges")
#: Longest variant name accepted in a request (registered and custom names are far shorter).
MAX_NAME = 100
#: Seconds a look at the files stands for (a rebuild is seen within it).
RESCAN_S = 1.0
#: Seconds between two looks of a watcher (:meth:`Directory.watch`).
WATCH_S = RESCAN_S / 2


@dataclass(frozen=True)
class Entry:
    """One variant of the data directory (built or not)."""

    name: str
    variant: Variant
    rules: dict[str, Any] | None
    """The rules its tables were built with (None: not built)."""
    files: dict[str, Path] = field(default_factory=dict)
    """Table name -> the file holding its rows (its own file, or the shared one)."""
    damaged: str = ""
    """Why its states cannot be read (a file of its own, or a shared file the manifest says
    holds it, is damaged): a variant built but unreadable, not one to build ("" when not)."""

    @property
    def built(self) -> bool:
        return "states" in self.files

    @property
    def own(self) -> bool:
        """Stored in files of its own (variants/<name>/): a big variant."""
        states = self.files.get("states")
        return states is not None and states.parent.parent.name == OWN_DIR

    @property
    def family(self) -> str:
        return self.variant.family

    @property
    def view(self) -> str:
        """How its positions are drawn and asked (its family says: :attr:`Variant.view`)."""
        return self.variant.view

    def holds(self, tables: tuple[str, ...]) -> bool:
        """Whether every one of ``tables`` holds its rows."""
        return all(t in self.files for t in tables)

    def build_command(self) -> str:
        """The command that builds it."""
        if self.variant.name in REGISTRY:
            return f"stb-pipeline build --variant {self.name}"
        return f"stb-pipeline build --variant {self.name} (custom rules: see stb-pipeline rules)"


#: A file's version: its :func:`~pipeline.store.footers.signature` and the manifest's sha256 of
#: it (None where the manifest lists none).
Version = tuple[tuple[int, int, int], str | None]


@dataclass(frozen=True)
class Look:
    """Every table file of a data directory at one moment: its signature and the sha256 the
    manifest records for it (what says a file read before is still the one on disk)."""

    files: dict[str, tuple[int, int, int]]
    """Each table file's path (as a string) -> its signature."""
    manifest: tuple[int, int, int] | None
    shas: dict[str, str]
    """Each table file's path -> the manifest's sha256 of it."""

    def version(self, path: str) -> Version | None:
        """The version of the file at ``path`` (None: no such table file in this look)."""
        found = self.files.get(path)
        return None if found is None else (found, self.shas.get(path))

    def same(self, other: Look) -> bool:
        return self.files == other.files and self.manifest == other.manifest


@dataclass
class Snapshot:
    """What the data directory holds at one moment."""

    entries: dict[str, Entry]
    problems: list[str]
    """One line per table file that could not be read (the rest is served)."""
    unreadable_states: list[str] = field(default_factory=list)
    """Those of them that are ``states`` files."""
    recorded: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The rules every ``states`` file records, by variant (those no family reads back too:
    a board built under a name of its own is found by its rules)."""

    def customs(self) -> dict[str, Variant]:
        """The variants built here under names the registry does not know (built or damaged),
        made from their recorded rules."""
        return {
            n: e.variant
            for n, e in sorted(self.entries.items())
            if n not in REGISTRY and (e.built or e.damaged)
        }


class Directory:
    """The variants of one data directory, read again when its files change (thread-safe)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._lock = threading.Lock()
        self._look: Look | None = None
        self._checked = 0.0
        self._snapshot: Snapshot | None = None
        self._seen: Look | None = None
        """The look the snapshot was taken at."""
        self._watchers = 0
        self._stop = threading.Event()
        self._shas: tuple[tuple[int, int, int] | None, dict[str, str]] | None = None

    # -- freshness ------------------------------------------------------------------------------

    def look(self) -> Look:
        """The current look at the files: the watcher's latest, or one taken now when the last
        is older than :data:`RESCAN_S` and no watcher runs."""
        found = self._look
        if found is None or (not self._watchers and time.monotonic() - self._checked >= RESCAN_S):
            return self.refresh()
        return found

    def refresh(self) -> Look:
        """Look at the files now (a listing and a stat each; the manifest read again only when
        it changed); the look kept is the old one where nothing changed."""
        with self._lock:
            now = _look(self.data_dir, self._manifest_shas)
            if self._look is None or not self._look.same(now):
                self._look = now
            self._checked = time.monotonic()
            return self._look

    def version(self, path: str) -> Version | None:
        """The version of the table file at ``path``: the watcher's latest look's where one
        runs (nothing on disk is looked at), else the file's signature now and the manifest's
        sha256 of it (two stats: a process without a watcher sees a file changed at once)."""
        if self._watchers:
            return self.look().version(path)
        now = maybe_signature(path)
        return None if now is None else (now, self._manifest_shas().get(path))

    def _manifest_shas(self) -> dict[str, str]:
        """The manifest's sha256 of each table file (read again only when it changed)."""
        stamp = maybe_signature(manifest_path(self.data_dir))
        found = self._shas
        if found is None or found[0] != stamp:
            shas = {str(self.data_dir / f"{k}.parquet"): v for k, v in _shas(self.data_dir).items()}
            found = self._shas = (stamp, shas)
        return found[1]

    def watch(self) -> None:
        """Start looking at the files every :data:`WATCH_S` seconds on a thread of its own (the
        snapshot taken again there when they change), so that no request does; one thread
        however many callers, stopped when the last calls :meth:`unwatch`."""
        with self._lock:
            self._watchers += 1
            if self._watchers > 1:
                return
            self._stop.clear()
        threading.Thread(target=self._watch, name="stb-directory-watch", daemon=True).start()

    def unwatch(self) -> None:
        with self._lock:
            self._watchers = max(0, self._watchers - 1)
            if not self._watchers:
                self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_S):
            with contextlib.suppress(Exception):  # a look that fails is taken again next time
                self.refresh()
                if self._snapshot is not None:
                    self.snapshot()

    # -- what is built --------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The snapshot of the current look (taken again when the files changed)."""
        look = self.look()
        if self._snapshot is not None and self._seen is look:
            return self._snapshot
        with self._lock:
            if self._snapshot is not None and self._seen is self._look:
                return self._snapshot
        settle(self.data_dir)  # a commit in progress or interrupted: finish it first
        look = self.refresh()
        found = scan(self.data_dir)
        with self._lock:
            self._snapshot, self._seen = found, look
        return found

    def entry(self, name: str) -> Entry:
        """The variant called ``name`` (built or not); UnknownVariantError (a 404) when none,
        TableError (a 503) naming it when its tables are damaged."""
        if len(name) > MAX_NAME:
            raise UsageError(f"variant name longer than {MAX_NAME} characters")
        found = self.snapshot().entries.get(name)
        if found is None:
            raise UnknownVariantError(f"unknown variant {name!r}: the index lists the variants")
        if found.damaged:
            raise TableError(f"{name} is built but its tables cannot be read: {found.damaged}")
        return found

    def find(self, rules: Mapping[str, Any], prefer: str = "") -> str | None:
        """The built variant whose tables record ``rules``: ``prefer`` where it is one, else
        the first by name (None: no such build)."""
        built = self.snapshot().recorded
        if built.get(prefer) == rules:
            return prefer
        return next((n for n in sorted(built) if built[n] == rules), None)

    def resolve(self, name: str) -> Variant:
        """The variant ``name`` names: registered, a custom rule set named by its rules, or one
        built here under its own name (UsageError, with the closest names, when none)."""
        try:
            return lookup(name, {})
        except UsageError:
            customs = self.snapshot().customs() if self.data_dir.is_dir() else {}
            if not customs:
                raise
            return lookup(name, customs)


_opened: set[Path] = set()


@lru_cache(maxsize=16)
def _of(data_dir: Path) -> Directory:
    _opened.add(data_dir)
    return Directory(data_dir)


def of(data_dir: Path) -> Directory:
    """The data directory's :class:`Directory`, one per process (its snapshot kept)."""
    return _of(Path(data_dir).resolve())


def resolve(name: str, data_dir: Path | None) -> Variant:
    """:meth:`Directory.resolve` (registered names only without a data directory)."""
    return lookup(name, {}) if data_dir is None else of(data_dir).resolve(name)


def scan(data_dir: Path) -> Snapshot:
    """Read the rules metadata of every table file of ``data_dir``."""
    rules_by_table: dict[str, dict[str, tuple[dict, Path]]] = {t: {} for t in TABLES}
    problems: list[str] = []
    damaged: dict[str, str] = {}  # variant -> why its states cannot be read
    unreadable: list[str] = []
    for table in TABLES:
        for path in table_files(data_dir, table):
            try:
                found = file_rules(path)
            except Exception as exc:  # the engines raise many kinds: all mean damaged
                problem = _unreadable(path, exc)
                problems.append(problem)
                if table == "states":
                    unreadable.append(problem)
                    damaged.update((name, problem) for name in _held(data_dir, path))
                continue
            for name, rules in found.items():
                rules_by_table[table].setdefault(name, (rules, path))
    entries: dict[str, Entry] = {}
    for name, (rules, _) in sorted(rules_by_table["states"].items()):
        variant = REGISTRY.get(name) or variant_from_rules(name, rules)
        if variant is None:
            problems.append(f"variant {name}: no game family reads its rules; skipped")
            continue
        files = {t: found[name][1] for t, found in rules_by_table.items() if name in found}
        entries[name] = Entry(name, variant, rules, files)
    in_manifest = _recorded_rules(data_dir) if damaged else {}
    for name, problem in sorted(damaged.items()):
        variant = REGISTRY.get(name) or variant_from_rules(name, in_manifest.get(name) or {})
        if name not in entries and variant is not None:
            entries[name] = Entry(name, variant, None, {}, damaged=problem)
    for name, variant in REGISTRY.items():
        if name not in entries:
            entries[name] = Entry(name, variant, None, {})
    recorded = {name: rules for name, (rules, _) in rules_by_table["states"].items()}
    return Snapshot(entries, problems, unreadable, recorded)


def changed(data_dir: Path) -> None:
    """Say that this process changed ``data_dir``'s files (a commit): its :class:`Directory`,
    where one is open, looks again now rather than within the second."""
    key = Path(data_dir).resolve()
    if key in _opened:
        _of(key).refresh()


def _look(data_dir: Path, shas: Callable[[], dict[str, str]]) -> Look:
    """A look at every table file of ``data_dir``, with the manifest's shas (``shas()``: read
    again only when the manifest changed)."""
    files: dict[str, tuple[int, int, int]] = {}
    for table in TABLES:
        for path in table_files(data_dir, table):
            with contextlib.suppress(OSError):  # gone since the listing: not there
                files[str(path)] = signature(path)
    return Look(files, maybe_signature(manifest_path(data_dir)), shas())


def _shas(data_dir: Path) -> dict[str, str]:
    """The sha256 manifest.json records for each table file, by its key (none where there is
    no readable manifest)."""
    tables = _recorded(data_dir, "tables")
    return {k: str(e.get("sha256")) for k, e in tables.items() if isinstance(e, dict)}


def _recorded(data_dir: Path, part: str) -> dict[str, Any]:
    """The ``part`` manifest.json records (``tables`` or ``variants``); empty when there is no
    readable manifest: what it would say is then unknown, not an error here."""
    if not manifest_path(data_dir).exists():  # (an empty manifest hashes the package's code)
        return {}
    try:
        return manifest.read(data_dir).get(part, {})
    except PipelineError:
        return {}


def _unreadable(path: Path, exc: Exception) -> str:
    """One line for a table file that cannot be read (the reader's own line when it has one)."""
    if isinstance(exc, PipelineError):
        return (str(exc).splitlines() or ["unreadable"])[0]
    return str(unreadable(path, exc))


def _held(data_dir: Path, path: Path) -> list[str]:
    """The variants a damaged states file held: its own variant (``variants/NAME/``), or those
    manifest.json records for the shared file (none when the manifest cannot say)."""
    if path.parent.parent.name == OWN_DIR:
        return [path.parent.name]
    return sorted(_recorded(data_dir, "tables").get(path.stem, {}).get("variants", {}))


def _recorded_rules(data_dir: Path) -> dict[str, Any]:
    """The rules manifest.json records for each variant built (none when it cannot say)."""
    recorded = _recorded(data_dir, "variants")
    return {n: r.get("rules") for n, r in recorded.items() if isinstance(r, dict)}
