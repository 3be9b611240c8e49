"""What a data directory holds: every built variant (shared files and variants/<name>/), each
with its family's view, and every registered variant that is not built, with the command that
builds it.

Read from the ``stb.rules`` metadata of the table files only (a few KB each), never by scanning
rows, and again only when a file changes (at most once a second), so a build that finishes
while the server runs shows up on the next page load. Nothing here writes: an interrupted commit
is left for the next build to finish (the tables read are complete files either way).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError, TableError, UsageError
from pipeline.games.registry import REGISTRY, Variant, variant_from_rules
from pipeline.store.layout import OWN_DIR, rebuild_hint, table_files

#: Tables the page reads (states is what makes a variant "built").
TABLES = ("states", "policy", "moves")
#: How each family's positions are drawn and asked (anything else: one row of tiles, and a
#: roll): Double Shutter's two rows of tiles, Knucklebones' boards (and a die).
VIEWS = {"double_shutter": "rows", "knucklebones": "boards"}
#: Longest variant name accepted in a request (registered and custom names are far shorter).
MAX_NAME = 100
#: Seconds between two looks at the files' modification times.
RESCAN_S = 1.0


@dataclass(frozen=True)
class Entry:
    """One variant the page can show."""

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
        return self.variant.family or "shutbox"

    @property
    def view(self) -> str:
        return view_of(self.variant)

    def build_command(self) -> str:
        """The command that builds it."""
        if self.variant.name in REGISTRY:
            return f"stb-pipeline build --variant {self.name}"
        return f"stb-pipeline build --variant {self.name} (custom rules: see stb-pipeline rules)"


@dataclass
class Snapshot:
    """The catalog at one moment."""

    entries: dict[str, Entry]
    problems: list[str]
    """One line per table file that could not be read (the rest is served)."""


class Catalog:
    """The variants of one data directory, rescanned when its table files change."""

    def __init__(self, data_dir: Path, read_rules: Callable[[Path], dict[str, Any]]) -> None:
        """``read_rules(path)``: the rules recorded in a table file, by variant."""
        self.data_dir = Path(data_dir)
        self.read_rules = read_rules
        self._lock = threading.Lock()
        self._signature: tuple = ()
        self._checked = 0.0
        self._snapshot = Snapshot({}, [])

    def snapshot(self) -> Snapshot:
        """The current catalog (rescanned if a table file changed since the last look)."""
        now = time.monotonic()
        if now - self._checked < RESCAN_S and self._signature:
            return self._snapshot
        with self._lock:
            signature = self._files_signature()
            if signature != self._signature or not self._signature:
                self._snapshot = scan(self.data_dir, self.read_rules)
                self._signature = signature or (("empty",),)
            self._checked = now
            return self._snapshot

    def _files_signature(self) -> tuple:
        out = []
        for table in TABLES:
            for path in table_files(self.data_dir, table):
                try:
                    st = path.stat()
                except OSError:
                    continue
                out.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(out)

    def entry(self, name: str) -> Entry:
        """The variant called ``name`` (built or not); UsageError (a 400) when no such variant,
        TableError (a 503) naming it when its tables are damaged."""
        if len(name) > MAX_NAME:
            raise UsageError(f"variant name longer than {MAX_NAME} characters")
        found = self.snapshot().entries.get(name)
        if found is None:
            raise UsageError(f"unknown variant {name!r}: the index lists the variants")
        if found.damaged:
            raise TableError(f"{name} is built but its tables cannot be read: {found.damaged}")
        return found


def scan(data_dir: Path, file_rules: Callable[[Path], dict[str, Any]]) -> Snapshot:
    """Read the rules metadata of every table file of ``data_dir``."""
    rules_by_table: dict[str, dict[str, tuple[dict, Path]]] = {t: {} for t in TABLES}
    problems: list[str] = []
    damaged: dict[str, str] = {}  # variant -> why its states cannot be read
    for table in TABLES:
        for path in table_files(data_dir, table):
            try:
                found = file_rules(path)
            except Exception as exc:  # pyarrow raises many kinds: all mean damaged
                problem = _unreadable(path, exc)
                problems.append(problem)
                if table == "states":
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
    recorded = _recorded_rules(data_dir) if damaged else {}
    for name, problem in sorted(damaged.items()):
        variant = REGISTRY.get(name) or variant_from_rules(name, recorded.get(name) or {})
        if name not in entries and variant is not None:
            entries[name] = Entry(name, variant, None, {}, damaged=problem)
    for name, variant in REGISTRY.items():
        if name not in entries:
            entries[name] = Entry(name, variant, None, {})
    return Snapshot(entries, problems)


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


def view_of(variant: Variant) -> str:
    """How ``variant``'s positions are drawn and asked: ``tiles``, ``rows`` or ``boards``."""
    return VIEWS.get(variant.family or "shutbox", "tiles")
