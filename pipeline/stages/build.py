"""The build: the stages (enumerate, edges, solve, policy, strategies) of every variant asked
for, written into the data directory and committed together.

A variant built from its graph gets its rows from :mod:`pipeline.stages.frames` (polars, loaded
only then); one too big for a graph streams them from its game's solver
(:mod:`pipeline.stages.streamed`). :func:`run` writes both with :mod:`pipeline.store.tables`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline import progress
from pipeline.errors import TableError, TablesMissingError, UsageError
from pipeline.games.base import Game, Streamed
from pipeline.games.registry import Variant
from pipeline.games.solved import Solved
from pipeline.stages import streamed as streamed_build
from pipeline.stages.names import STAGES
from pipeline.store import catalog, directory, layout, manifest, schema, tables
from pipeline.store.background import Background

if TYPE_CHECKING:
    import polars as pl

#: Threads that finish the tables at the end of a build (Parquet encoding releases the GIL).
FINISHERS = 2


@dataclass(frozen=True)
class StageReport:
    """What one variant's run produced, for the CLI's summary."""

    variant: str
    states: int
    nodes: int
    moves: int
    start_value: float | None
    tables: tuple[str, ...]
    seconds: float
    note: str = ""
    skipped: bool = False


def run(
    variants: Sequence[Variant],
    stages: Sequence[str],
    data_dir: Path,
    exact: bool = False,
    skip_unchanged: bool = False,
    extra_tables: Sequence[str] = (),
    repair: bool = False,
    device: str = "cpu",
) -> list[StageReport]:
    """Run ``stages`` for each variant and write their tables into ``data_dir``.

    Variants are computed in name order, because every table is sorted by variant: each
    variant's rows go straight into the new tables' temporary files (on a writer thread, while
    the next variant is computed) and are dropped, so memory holds one variant at a time. The
    tables are then put in place in one commit; the data directory's lock is held from the
    first read of an old table to the commit (so a concurrent build waits instead of losing
    rows), and a failure part-way leaves the old tables as they were and no temporary file.

    A variant whose game streams (big custom boxes, the opt-in Knucklebones boards) is solved
    without a graph and committed on its own; it writes states and policy, plus
    ``extra_tables`` (``moves``, ``edges``) when asked. With ``skip_unchanged``, a variant whose
    last run (per ``manifest.json``) had the same stages, rules and code hash, and whose tables
    are unchanged since, is not recomputed. Progress goes to :mod:`pipeline.progress`: one job
    for the run, one per variant and stage. Reports come in the order ``variants`` were given.

    A shared table that is no longer the file ``manifest.json`` records (emptied, cut, replaced
    or missing) would lose the rows of every variant it held that this run does not rebuild:
    the run refuses, naming them, or with ``repair`` (`build --force`) rebuilds them too.
    ``device`` other than ``cpu`` (``cuda``) solves the streamed variants there; UsageError
    before any work for a variant whose game cannot (see :attr:`pipeline.games.base.Game.devices`).
    Every commit rewrites the catalog (``stb.duckdb``, :mod:`pipeline.store.catalog`); a run
    that commits nothing writes it when it is missing or out of date.
    """
    if exact:  # before any work: a refusal after minutes of solving helps nobody
        for variant in variants:
            _check_exact(variant, None if variant.separate else variant.make())
    if device != "cpu":
        _check_device(variants, device, exact, stages)
    if list(stages) == ["strategies"]:
        _check_searchable(variants, data_dir)
    tables.ensure_writable(data_dir)
    variants = _cover_changed_tables(variants, data_dir, repair)
    known = manifest.read(data_dir) if skip_unchanged else manifest.empty()
    build = _Build(list(stages), data_dir, exact, extra_tables, device)
    with build, progress.task("build", total=len(variants), unit="variants") as job:
        for variant in sorted(variants, key=lambda v: v.name):
            job.update(note=variant.name)
            build.variant(variant, known)
            job.advance()
        if build.pending():
            job.update(note="writing tables")
            build.write()
        elif catalog.state(data_dir) != "current":
            # nothing committed (every variant unchanged): a catalog missing, from an older
            # version, or pointing where the directory was before a move is written now
            build.locked()
            catalog.refresh(data_dir)
    order = {v.name: i for i, v in enumerate(variants)}
    return sorted(build.reports, key=lambda r: order[r.variant])


def _check_exact(variant: Variant, game: Game | None) -> None:
    """UsageError when ``--exact`` cannot apply to ``variant`` (``game``: its game, None for a
    variant built without a graph, which is not even made for this)."""
    if variant.separate or game is None:
        raise UsageError(
            f"--exact does not apply to {variant.name}: it is too big for exact fractions "
            "(it is built without a graph); build it without --exact"
        )
    if game.cyclic:
        raise UsageError(
            f"--exact does not apply to {variant.name}: its positions can come back, so it is "
            "solved by value iteration, not in exact fractions; build it without --exact"
        )


def _check_searchable(variants: Sequence[Variant], data_dir: Path) -> None:
    """Before any work, for the strategies stage alone (`stb-pipeline strategies`): UsageError
    for a variant whose game has no rules to search, TablesMissingError for one not built in
    ``data_dir`` (its strategy rows would sit beside no states rows, and every query refuses
    a variant without them)."""
    built = directory.scan(data_dir).recorded
    for variant in variants:
        if not variant.make().searches_rules:
            family = variant.family
            raise UsageError(
                f"strategies searches the rules of one-player Shut the Box boxes; {variant.name} "
                f"is a game of the {family} family, with no such rules to search"
            )
        if variant.name not in built:
            raise TablesMissingError(
                f"{variant.name} is not built in {data_dir}: run `stb-pipeline build --variant "
                f"{variant.name} --data-dir {data_dir}` first, then strategies"
            )


def _cover_changed_tables(
    variants: Sequence[Variant], data_dir: Path, repair: bool
) -> list[Variant]:
    """``variants``, plus (with ``repair``) every variant a changed shared table held; without
    ``repair``, TableError when such a variant would lose its rows."""
    from pipeline.games.registry import lookup

    chosen = {v.name for v in variants}
    changed = manifest.changed_shared_tables(data_dir)
    lost = sorted({v for _, _, held in changed for v in held} - chosen)
    if not lost:
        return list(variants)
    names = ",".join(sorted(chosen | set(lost)))
    what = "; ".join(f"{name} {why}" for name, why, held in changed if set(held) - chosen)
    if not repair:
        raise TableError(
            f"{what}: it held rows of {', '.join(lost)} as well, which this build would drop; "
            f"rebuild them all with `stb-pipeline build --force --variant {names}`"
        )
    built = directory.scan(data_dir).customs()  # the custom ones, from their recorded rules
    try:
        return [*variants, *(lookup(name, built) for name in lost)]
    except UsageError:
        raise TableError(
            f"{what}: it held rows of {', '.join(lost)}, which cannot all be rebuilt from their "
            f"recorded rules; {manifest.REBUILD}"
        ) from None


@dataclass
class _Build:
    """One run of the stages: each variant's rows handed to the new tables as they come, the
    tables committed together by :meth:`write`. Used as a context manager, a failure drops
    every temporary file."""

    stages: list[str]
    data_dir: Path
    exact: bool
    extra_tables: Sequence[str]
    device: str = "cpu"
    #: Tables written a variant at a time (those with one fixed schema), by table key.
    merges: dict[str, tables.TableMerge] = field(default_factory=dict)
    #: Small tables without a fixed schema, or replaced by row key: merged whole at the end.
    held: dict[str, dict[str, pl.DataFrame | tables.ChunkedRows]] = field(default_factory=dict)
    rules: dict[str, dict] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)
    reports: list[StageReport] = field(default_factory=list)
    #: One writer thread, keyed by table; a build that finds it busy encodes another table's
    #: rows itself (a second writer thread encoded little faster and held more rows).
    writer: Background = field(default_factory=lambda: Background(caller_runs=True))
    #: Holds the data directory's lock once taken (see :meth:`locked`), until the build ends.
    lock: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    has_lock: bool = False

    def __enter__(self) -> _Build:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        with self.lock:
            self.writer.close()
            if kind is not None:
                for merge in self.merges.values():
                    merge.discard()

    def locked(self) -> None:
        """Take the data directory's lock, if not yet held: before reading an old table whose
        rows are to be kept, or before a commit."""
        if not self.has_lock:
            self.lock.enter_context(tables.data_lock(self.data_dir))
            self.has_lock = True

    def variant(self, variant: Variant, known: dict[str, Any]) -> None:
        """Compute one variant's rows (or skip it when unchanged, or stream it to its files)."""
        t0 = time.perf_counter()
        game = variant.make()
        if self.exact:
            _check_exact(variant, game)
        options = {"exact": self.exact}
        rules = game.rules()
        record = manifest.up_to_date(
            self.data_dir, known, variant.name, rules, self.stages, options
        )
        if record is not None:
            self.reports.append(_skipped_report(variant.name, record))
            return
        if variant.separate:
            self._drop_shared_rows(variant.name)
        streamed = _streamed_build(
            variant, game, self.stages, self.extra_tables, self.exact, self.device
        )
        if streamed is not None:
            with progress.task(f"{variant.name}: {streamed.what}"):
                report = _run_streamed(variant, game, streamed, self.stages, self.data_dir, self)
            self.reports.append(report)
            if streamed.extra is not None and set(STAGES) <= set(self.stages):
                # the game's shared tables (its summary), merged with the other variants' rows
                self.rules[variant.name] = rules
                for name, frame in streamed.extra().items():
                    self._hand_over(name, variant.name, frame)
            return
        with progress.task(f"{variant.name}: graph"):
            s = Solved(variant, game, game.graph(), exact=self.exact)
        self.rules[variant.name] = rules
        table_rows = self._hand_over_all(s)
        report = _report(s, self.stages, table_rows, time.perf_counter() - t0)
        summary = {k: getattr(report, k) for k in ("states", "nodes", "moves", "start_value")}
        self.records[variant.name] = manifest.variant_record(
            rules, self.stages, s.seeds, table_rows, summary, options
        )
        self.reports.append(report)
        del s  # the graph and solution go before the next variant is computed
        _return_freed_memory()

    def _hand_over_all(self, s: Solved) -> dict[str, int]:
        """Hand every table of a solved variant to its writer as it is made; rows per table."""
        from pipeline.stages.frames import iter_stage_frames  # polars: graph builds only

        table_rows: dict[str, int] = {}
        for name, frame in iter_stage_frames(s, self.stages):
            table_rows[name] = frame.height
            self._hand_over(table_key(s.variant, name), s.variant.name, frame)
        return table_rows

    def _hand_over(
        self,
        key: str,
        variant: str,
        frame: pl.DataFrame | tables.ChunkedRows,
        keep_rules: bool = True,
    ) -> None:
        """Give one table's rows of a variant to its writer (or hold them, for small tables);
        without ``keep_rules`` the table's file no longer records the variant's rules."""
        if key in tables.ROW_KEYS or layout.logical_name(key) not in schema.COLUMNS:
            self.held.setdefault(key, {})[variant] = frame
            return
        if key not in self.merges:
            self.locked()
            self.merges[key] = tables.TableMerge(layout.table_path(self.data_dir, key))
        rules = self.rules[variant] if keep_rules else None
        self.writer.submit(self.merges[key].add, variant, frame, rules, key=key)

    def _drop_shared_rows(self, variant: str) -> None:
        """A variant stored on its own has no rows in the shared tables: rows that an earlier
        build put there (from before the variant was stored on its own) go, through the same
        merges and in the same variant order as every other variant's rows, so that no reader
        sees the variant twice."""
        listed = manifest.read(self.data_dir).get("tables", {})
        for table in sorted(OWN_TABLES):
            if variant in listed.get(table, {}).get("variants", {}):
                empty = schema.empty_frame(table)
                assert empty is not None  # every table stored on its own has one schema
                self._hand_over(table, variant, empty, keep_rules=False)

    def pending(self) -> bool:
        """Whether any rows wait to be committed."""
        return bool(self.merges or self.held)

    def write(self) -> None:
        """Finish the tables and commit them all at once, under the data directory's lock."""
        with progress.task(f"writing {len(self.merges) + len(self.held)} tables"):
            self.locked()
            self.writer.wait()
            keys = list(self.merges)
            # the tables' last rows encode on two threads while the small tables are merged
            with concurrent.futures.ThreadPoolExecutor(FINISHERS) as pool:
                finished = pool.map(lambda key: self.merges[key].finish(), keys)
                held = {
                    key: tables.merged_rows(self.data_dir, key, by_variant, self.rules)
                    for key, by_variant in self.held.items()
                }
                staged: dict[str, Any] = dict(zip(keys, finished, strict=True)) | held
            tables.commit(self.data_dir, staged, self.records)


def _report(
    s: Solved, stages: Sequence[str], frames: dict[str, int], seconds: float
) -> StageReport:
    """What one variant's run produced, with a note on skipped tables and value iteration."""
    start = _start_value(s) if s.solution is not None else None
    skipped: list[str] = []
    if s.game.skip_edges:
        skipped = [t for t, st in (("edges", "edges"), ("moves", "policy")) if st in stages]
        # the build hook leaves out the per-state strategy tables too
        skipped += ["reach", "node_reach"] if "benchmarks" in frames else []
    plural = "s" if len(skipped) > 1 else ""
    note = f"{', '.join(skipped)} table{plural} skipped (too large)" if skipped else ""
    if list(stages) == ["strategies"] and "strategy_search" not in frames:
        note = "no rules to search: the strategies stage is for one-player Shut the Box boxes"
    if s.solution is not None and s.solution.iterations:
        sweeps = f"{s.solution.iterations} sweeps, last change {s.solution.residual:.1e}"
        note = "; ".join(filter(None, [note, f"value iteration: {sweeps}"]))
    return StageReport(
        s.variant.name,
        s.graph.n_states,
        int(s.graph.node_state.shape[0]),
        int(np.count_nonzero(s.graph.mv_label >= 0)),
        start,
        tuple(sorted(frames)),
        seconds,
        note,
    )


#: Tables a variant stored on its own (Variant.separate) keeps in its own files; the summary and
#: benchmark rows stay in the shared files whatever the variant.
OWN_TABLES = frozenset({"states", "edges", "policy", "moves", "reach", "node_reach"})


def table_key(variant: Variant, table: str) -> str:
    """Where ``variant``'s rows of ``table`` go: the shared file, or the variant's own file."""
    if variant.separate and table in OWN_TABLES:
        return layout.own_key(variant.name, table)
    return table


def _check_device(
    variants: Sequence[Variant], device: str, exact: bool, stages: Sequence[str]
) -> None:
    """UsageError unless every variant is built without a graph by a game that runs on
    ``device``: the graph build runs on the CPU only."""
    if exact:
        raise UsageError(f"--exact builds on the CPU: leave out --device {device}")
    if not {"solve", "policy"} & set(stages):
        raise UsageError(f"--device {device} is for the stages that solve (build, solve, policy)")
    for v in variants:
        if not v.separate or device not in v.make().devices:
            raise UsageError(
                f"{v.name} is built on the CPU; --device {device} builds only the boards solved "
                "without a graph that support it (the opt-in Knucklebones boards)"
            )


def _streamed_build(
    variant: Variant,
    game: Game,
    stages: Sequence[str],
    extra: Sequence[str],
    exact: bool,
    device: str = "cpu",
) -> Streamed | None:
    """The game's graph-free build, for a variant stored on its own (None: use the graph)."""
    if not variant.separate or exact or not {"solve", "policy", "edges"} & set(stages):
        return None
    on = {} if device == "cpu" else {"device": device}
    if list(stages) == ["edges"]:
        return game.stream(("edges",), **on)
    return game.stream(("states", "policy", *(t for t in ("moves", "edges") if t in extra)), **on)


def _run_streamed(
    variant: Variant,
    game: Game,
    streamed: Streamed,
    stages: list[str],
    data_dir: Path,
    build: _Build,
) -> StageReport:
    """Write a streamed variant's tables (its own files: no lock needed meanwhile) and commit
    them with its manifest record."""
    staged, summary = streamed_build.write_streamed(variant, game, streamed, data_dir)
    rows = {layout.logical_name(k): t.num_rows for k, t in staged.items()}
    record = streamed_build.variant_record(game, stages, rows, summary)
    build.locked()
    tables.commit(data_dir, dict(staged), {variant.name: record})
    return StageReport(
        variant.name,
        summary["states"],
        summary["nodes"],
        summary["moves"],
        summary["start_value"],
        tuple(sorted(rows)),
        summary["seconds"],
        streamed.note,
    )


def _return_freed_memory() -> None:
    """Give the memory freed by the last variant back to the system (glibc keeps freed heap
    pages for reuse, so a build's resident memory would otherwise stay at its largest variant's
    high-water mark plus fragmentation, instead of falling between variants)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _skipped_report(name: str, record: dict) -> StageReport:
    """The report of a variant left as it was: its summary from the manifest."""
    summary = record.get("summary", {})
    return StageReport(
        name,
        int(summary.get("states", 0)),
        int(summary.get("nodes", 0)),
        int(summary.get("moves", 0)),
        summary.get("start_value"),
        (),
        0.0,
        "unchanged since the last build (same rules and code hash): skipped; --force rebuilds",
        skipped=True,
    )


def _start_value(s: Solved) -> float:
    """Value of the variant's start state."""
    assert s.solution is not None
    idx = np.flatnonzero(s.graph.state_id == s.game.start_state())[0]
    return float(s.solution.value[idx])
