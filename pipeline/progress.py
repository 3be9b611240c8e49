"""Progress of long jobs, the same way for every command: what, how far, how fast, how long.

On a terminal, a rich progress bar on stderr; elsewhere (a pipe, a log file) one plain line on
stderr every few seconds and one when the job ends. Jobs shorter than :data:`SHOW_AFTER` seconds
show nothing at all, so quick commands (and their one-line errors) stay clean. ``--quiet`` (or
``STB_QUIET=1``) silences every job.

Use it as a context manager around the work::

    with progress.task("classic: solve", total=9, unit="ranks") as job:
        for rank in ranks:
            ...
            job.advance()

Tasks nest: an inner task's line names its outer ones (``build > classic: solve``). Lines are
written by a background thread, so a job that calls nothing for a minute (a numba kernel) still
says that it is running.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

#: A job shorter than this (seconds) shows nothing.
SHOW_AFTER = float(os.environ.get("STB_PROGRESS_AFTER", "2"))
#: Seconds between two plain lines of a running job.
INTERVAL = float(os.environ.get("STB_PROGRESS_INTERVAL", "5"))

T = TypeVar("T")

_state: dict[str, Any] = {"quiet": os.environ.get("STB_QUIET", "") not in ("", "0")}
_lock = threading.RLock()
_active: list[Task] = []
_ticker: dict[str, Any] = {"thread": None, "stop": None, "rich": None}


def set_quiet(quiet: bool) -> None:
    """Silence (or allow) progress output for the rest of the process."""
    _state["quiet"] = quiet


def is_quiet() -> bool:
    """True when progress output is silenced."""
    return bool(_state["quiet"])


def _on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


class Task:
    """One job in progress: ``done`` of ``total`` ``unit`` so far (total None: unknown)."""

    def __init__(
        self,
        what: str,
        total: float | None,
        unit: str,
        parent: Task | None,
        show_after: float | None = None,
    ) -> None:
        self.what = what
        self.show_after = SHOW_AFTER if show_after is None else show_after
        """Seconds before the job shows (:data:`SHOW_AFTER` unless the job says)."""
        self.total = total
        self.unit = unit
        self.parent = parent
        self.done = 0.0
        self.note = ""
        self.started = time.monotonic()
        self.last_line = self.started
        self.rich_id: Any = None

    def advance(self, n: float = 1) -> None:
        """Count ``n`` more units done."""
        self.done += n
        self._sync()

    def update(
        self,
        done: float | None = None,
        *,
        what: str | None = None,
        total: float | None = None,
        note: str | None = None,
    ) -> None:
        """Set how far the job is, or rename it, or change its total or its note."""
        for name, value in (("done", done), ("what", what), ("total", total), ("note", note)):
            if value is not None:
                setattr(self, name, value)
        self._sync()

    def elapsed(self) -> float:
        """Seconds since the job started."""
        return time.monotonic() - self.started

    def name(self) -> str:
        """The job's name after its outer jobs' names (a prefix they share is said once)."""
        if self.parent is None:
            return self.what
        head, _, tail = self.what.partition(": ")
        mine = tail if tail and self.parent.what.startswith(f"{head}: ") else self.what
        return f"{self.parent.name()} > {mine}"

    def line(self, ended: str = "") -> str:
        """One plain line: what, how far, rate, elapsed; ``ended``: how the job ended (``done``,
        ``failed``, ``interrupted``), for its last line."""
        secs = self.elapsed()
        parts = [f"{self.name()}:"]
        if ended:
            parts.append(f"{ended},")
        if self.total:
            pct = 100 * self.done / self.total
            parts.append(f"{_num(self.done)}/{_num(self.total)} {self.unit} ({pct:.0f} %),")
        elif self.done:
            parts.append(f"{_num(self.done)} {self.unit},")
        if self.done and secs > 0:
            parts.append(f"{_num(self.done / secs)} {self.unit}/s,")
        parts.append(f"{secs:.1f} s")
        if self.note:
            parts.append(f"({self.note})")
        return " ".join(parts)

    def _sync(self) -> None:
        """Pass the new numbers to the bar, if one is shown."""
        bar = _ticker["rich"]
        if bar is not None and self.rich_id is not None:
            desc = f"{self.what} {self.note}".strip()
            bar.update(self.rich_id, completed=self.done, total=self.total, description=desc)


def _num(x: float) -> str:
    """A count or rate, readable: 1,234 or 0.52."""
    return f"{x:,.0f}" if abs(x) >= 10 or x == int(x) else f"{x:.2g}"


@contextmanager
def task(
    what: str, total: float | None = None, unit: str = "steps", show_after: float | None = None
) -> Iterator[Task]:
    """Report the progress of the job run inside the ``with`` block (see the module docstring);
    ``show_after``: seconds before it shows, for a job worth a word sooner than most."""
    with _lock:
        job = Task(what, total, unit, _active[-1] if _active else None, show_after)
        _active.append(job)
        if not is_quiet():
            _start_ticker()
    ended = "done"
    try:
        yield job
    except BaseException as exc:
        # a job that raised did not get done, however far its count went (a build whose commit
        # met a full disk had counted every variant: it said "done, ... 100 %" before its error)
        ended = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        raise
    finally:
        with _lock:
            _active.remove(job)
            _finish(job, ended)
            if not _active:
                _stop_ticker()


def tracked(items: Iterable[T], what: str, total: int | None = None, unit: str = "") -> Iterator[T]:
    """Iterate over ``items`` as one job, one unit per item."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with task(what, total, unit or "items") as job:
        for item in items:
            yield item
            job.advance()


def log(line: str) -> None:
    """One line of record beside the jobs (above the bar on a terminal, plain elsewhere),
    silenced with them by ``--quiet``."""
    if not is_quiet():
        _say(line)


def warn(line: str) -> None:
    """One ``warning:`` line on stderr, shown even with ``--quiet``: something was skipped that
    the user should know about (a broken plugin), while the command goes on."""
    _say(f"warning: {line}")


def _say(line: str) -> None:
    """One line above the bar on a terminal, else plain on stderr."""
    bar = _ticker["rich"]
    if bar is not None:
        bar.console.print(line, markup=False, highlight=False)
    else:
        _write(line)


def _finish(job: Task, ended: str) -> None:
    """The job's last word: its bar goes, and a long job leaves one line saying how it ended."""
    bar = _ticker["rich"]
    if bar is not None and job.rich_id is not None:
        bar.remove_task(job.rich_id)
    if job.elapsed() >= job.show_after:
        log(job.line(ended))


def _write(line: str) -> None:
    """One plain line on stderr (looked up now, so a redirected stderr gets it)."""
    # stderr closed under us: progress is not worth failing for
    with contextlib.suppress(ValueError, OSError):
        print(line, file=sys.stderr, flush=True)


def _start_ticker() -> None:
    if _ticker["thread"] is not None:
        return
    stop = threading.Event()
    thread = threading.Thread(target=_tick, args=(stop, _on_terminal()), daemon=True)
    _ticker.update(thread=thread, stop=stop)
    thread.start()


def _stop_ticker() -> None:
    thread, stop, bar = _ticker["thread"], _ticker["stop"], _ticker["rich"]
    _ticker.update(thread=None, stop=None, rich=None)
    if stop is not None:
        stop.set()
    if bar is not None:
        bar.stop()
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=1)


def _tick(stop: threading.Event, terminal: bool) -> None:
    """Background: show the bar (terminal) or write plain lines for jobs older than SHOW_AFTER."""
    while not stop.wait(0.25):
        with _lock:
            if stop.is_set() or is_quiet():
                continue
            now = time.monotonic()
            due = [j for j in _active if now - j.started >= j.show_after]
            if terminal:
                _show_bars(due)
            elif due:
                _plain_line(due[-1], now)


def _plain_line(job: Task, now: float) -> None:
    """The innermost due job's line: as soon as it is due, then every INTERVAL seconds."""
    never_written = job.last_line == job.started
    if never_written or now - job.last_line >= INTERVAL:
        job.last_line = now
        _write(job.line())


def _show_bars(due: list[Task]) -> None:
    """Start the rich bar on first need and give every due job a row."""
    if not due:
        return
    if _ticker["rich"] is None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        # a job's name holds a variant's name as given: shown as it is, never read as markup
        columns = [
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
        ]
        console = Console(stderr=True, emoji=False)
        bar = Progress(*columns, TimeElapsedColumn(), console=console, transient=True)
        bar.start()
        _ticker["rich"] = bar
    bar = _ticker["rich"]
    for job in due:
        if job.rich_id is None:
            job.rich_id = bar.add_task(job.what, total=job.total, completed=job.done)
            job._sync()
