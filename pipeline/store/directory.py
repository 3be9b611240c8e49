"""What a data directory holds, read in one place, and the one way a variant's name resolves.

A :class:`Snapshot` says what is built: every built variant (the rules its tables record, the
file holding each of its tables), those whose tables are damaged (why), and every registered
variant that is not built, with the command that builds it. It is read from the ``stb.rules``
metadata of the table files only (:func:`pipeline.store.footers.file_rules`: a few KB each,
kept while the file is the same), never by scanning rows, and taken again when the directory's
signature changes: its directories' times (a commit renames its files in: seen at once) and,
at most once a second, every table file's inode, time and size (a file cut or replaced in
place). So a build that finishes while the server runs shows up on the next request.

:meth:`Directory.resolve` names a variant for every face, the command line, the Python API and
the server alike: a registered name, a custom rule set named by its rules
(``stb-12t-3d6-shut``), or a rule set built here under its own name (``build --name my-rules``
and then ``--variant my-rules``, ``pipeline.expect("my-rules")``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError, TableError, UnknownVariantError, UsageError
from pipeline.games.registry import REGISTRY, Variant, lookup, variant_from_rules
from pipeline.store.footers import file_rules, signature
from pipeline.store.layout import OWN_DIR, rebuild_hint, settle, table_files

#: The tables whose files say what is built (states is what makes a variant "built").
TABLES = ("states", "policy", "moves", "edges")
#: Longest variant name accepted in a request (registered and custom names are far shorter).
MAX_NAME = 100
#: Seconds between two looks at every table file (the directories' times are looked at always).
RESCAN_S = 1.0


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

    def built(self) -> dict[str, dict[str, Any]]:
        """Every built variant's recorded rules, by name."""
        return self.recorded

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
        self._dirs: tuple = ()
        self._files: tuple = ()
        self._checked = 0.0
        self._snapshot: Snapshot | None = None

    def snapshot(self) -> Snapshot:
        """The current snapshot (taken again if the directory's signature changed)."""
        dirs = self._dir_times()
        now = time.monotonic()
        if self._snapshot is not None and dirs == self._dirs and now - self._checked < RESCAN_S:
            return self._snapshot
        with self._lock:
            files = self._file_times()
            if self._snapshot is None or dirs != self._dirs or files != self._files:
                settle(self.data_dir)  # a commit in progress or interrupted: finish it first
                dirs, files = self._dir_times(), self._file_times()
                self._snapshot = scan(self.data_dir)
            self._dirs, self._files, self._checked = dirs, files, now
            return self._snapshot

    def _dir_times(self) -> tuple:
        """The directories' times: a commit renames its files into the data directory or a
        variant's own directory, which changes that directory's time (a few stats)."""
        out: list[Any] = [_stat(self.data_dir), _stat(self.data_dir / OWN_DIR)]
        with contextlib.suppress(OSError), os.scandir(self.data_dir / OWN_DIR) as found:
            out.extend((e.name, e.stat().st_mtime_ns) for e in found if e.is_dir())
        return tuple(sorted(out, key=str))

    def _file_times(self) -> tuple:
        out = []
        for table in TABLES:
            for path in table_files(self.data_dir, table):
                with contextlib.suppress(OSError):
                    out.append((str(path), *signature(path)))
        return tuple(out)

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
        built = self.snapshot().built()
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


@lru_cache(maxsize=16)
def _of(data_dir: Path) -> Directory:
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


def _stat(path: Path) -> tuple[int, int, int]:
    try:
        return signature(path)
    except OSError:
        return (0, 0, 0)


def _unreadable(path: Path, exc: Exception) -> str:
    """One line for a table file that cannot be read (the reader's own line when it has one)."""
    if isinstance(exc, PipelineError):
        return (str(exc).splitlines() or ["unreadable"])[0]
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return f"{path} is not a readable table ({first}); {rebuild_hint(path)}"


def _held(data_dir: Path, path: Path) -> list[str]:
    """The variants a damaged states file held: its own variant (``variants/NAME/``), or those
    manifest.json records for the shared file (none when the manifest cannot say)."""
    if path.parent.parent.name == OWN_DIR:
        return [path.parent.name]
    from pipeline.store import manifest

    try:
        tables = manifest.read(data_dir).get("tables", {})
    except PipelineError:
        return []
    return sorted(tables.get(path.stem, {}).get("variants", {}))


def _recorded_rules(data_dir: Path) -> dict[str, Any]:
    """The rules manifest.json records for each variant built (none when it cannot say)."""
    from pipeline.store import manifest

    try:
        recorded = manifest.read(data_dir).get("variants", {})
    except PipelineError:
        return {}
    return {n: r.get("rules") for n, r in recorded.items() if isinstance(r, dict)}
