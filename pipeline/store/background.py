"""A worker thread that runs tasks in order, so that writing overlaps computing.

Encoding Parquet (pyarrow) and building Arrow tables (polars) release the GIL, so on two cores
the build computes the next variant while the worker writes the last one. The queue is short:
the producer does not pile up rows in memory. A producer that finds it full either waits or,
with ``caller_runs``, runs a queued task itself: a task of another key than the worker's (the
build's tables are keys), so that both cores encode while the producer would otherwise idle,
and no more rows are held than the queue's depth allows.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

#: Wait this long (seconds) at a time for the worker, to notice that it has died.
POLL = 0.1


class Background:
    """Runs submitted calls on a worker thread: calls of one key one after another, in the
    order submitted, never two at once (the calls of different keys may run side by side when
    the producer helps).

    A call that raises stops the worker; the error is raised again in the producer at its next
    :meth:`submit` or at :meth:`wait`. :meth:`close` stops the worker after its current call.
    """

    def __init__(self, depth: int = 2, name: str = "stb-writer", caller_runs: bool = False) -> None:
        """``depth``: calls that may wait in the queue; ``caller_runs``: a producer that finds
        the queue full runs a waiting call whose key is free instead of waiting."""
        self._depth = depth
        self._caller_runs = caller_runs
        self._queue: deque[tuple[Hashable, Callable[..., Any], tuple[Any, ...]]] = deque()
        self._busy: set[Hashable] = set()
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._stop = False
        self._done = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __enter__(self) -> Background:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close()

    def submit(self, fn: Callable[..., Any], *args: Any, key: Hashable = None) -> None:
        """Queue ``fn(*args)`` after the calls of ``key`` already queued; while the queue is
        full, wait (or help); raise the worker's error."""
        with self._cond:
            self._wait_while(lambda: len(self._queue) >= self._depth)
            self._check()
            self._queue.append((key, fn, args))
            self._cond.notify_all()

    def wait(self) -> None:
        """Wait until every queued call has run (helping, with ``caller_runs``), stop the
        worker, and raise its error, if any."""
        with self._cond:
            self._wait_while(lambda: bool(self._queue or self._busy))
            self._done = True
            self._cond.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop the worker after its current call (queued calls are dropped) and wait for it."""
        with self._cond:
            self._stop = True
            self._queue.clear()
            self._cond.notify_all()
        self._thread.join()

    def _wait_while(self, busy: Callable[[], bool]) -> None:
        """Wait while ``busy()`` (helping, with ``caller_runs``), raising the worker's error
        (called holding the lock)."""
        while busy():
            self._check()
            if not (self._caller_runs and self._help()):
                self._cond.wait(POLL)

    def _check(self) -> None:
        """Raise the worker's error, or say that it has stopped (called holding the lock)."""
        if self._error is not None:
            raise self._error
        if not self._thread.is_alive():
            raise RuntimeError("the writer thread has stopped")

    def _take(self) -> tuple[Hashable, Callable[..., Any], tuple[Any, ...]] | None:
        """The first queued call whose key is not running, marked running (holding the lock).
        The queue keeps each key's calls in order, so the first of a key is its next."""
        for i, item in enumerate(self._queue):
            if item[0] not in self._busy:
                del self._queue[i]
                self._busy.add(item[0])
                return item
        return None

    def _help(self) -> bool:
        """Run one queued call in the producer's thread (holding the lock on entry and exit);
        False when every queued call's key is running."""
        item = self._take()
        if item is None:
            return False
        self._call(item)
        return True

    def _call(self, item: tuple[Hashable, Callable[..., Any], tuple[Any, ...]]) -> None:
        """Run a call taken from the queue without the lock (held on entry and exit), its key
        free again after it, whether it returned or raised."""
        key, fn, args = item
        self._cond.release()
        try:
            fn(*args)
        finally:
            self._cond.acquire()
            self._busy.discard(key)
            self._cond.notify_all()

    def _run(self) -> None:
        with self._cond:
            while True:
                item = None if self._stop else self._take()
                if item is None:
                    if self._stop or (self._done and not self._queue):
                        return
                    self._cond.wait(POLL)
                    continue
                try:
                    self._call(item)
                except BaseException as exc:  # handed to the producer, which raises it
                    self._error = exc
                    return
