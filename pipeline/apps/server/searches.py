"""The Knucklebones searches of `stb-pipeline serve`, run in a small pool of worker processes.

A board without tables (the full game) is answered by the depth-limited search: compiled code
that holds the GIL for milliseconds to seconds (depth 5 on an early position: a quarter of a
second). Run on the server's own process, in its thread pool or on its event loop, it would stop
every other request meanwhile, the table lookups that take a fraction of a millisecond too. So
the server hands each such request to :class:`SearchPool`: ``workers`` processes (started on the
first search, each with its own :class:`~pipeline.apps.server.positions.Positions` over the same
data directory, read only), and a limit on the searches waiting or running (``queue``): one
more is refused at once with :class:`Busy`, which the server answers with a 503 and a
``Retry-After``, rather than letting the waits grow without bound.

The workers run at a lower priority (``nice``): on a machine with few cores the lookups, which a
person waits for, get the CPU first. They ignore Ctrl-C (the server that started them stops them
when it stops; Ctrl-C in a terminal reaches the whole process group), and a worker that dies
(killed, out of memory) is replaced: the request it held is answered 503, the next one starts a
fresh pool.

What a worker runs is a plain function of the module that asks (``fn(positions, *args)``, sent
by name), so the answers are the same code whichever process computes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError

#: Worker processes a server process starts for searches, and the searches (waiting or running)
#: it accepts at once per worker before answering 503.
DEFAULT_WORKERS = 1
DEFAULT_QUEUE_PER_WORKER = 16
#: How much lower the workers' scheduling priority is than the server's (``nice`` increment):
#: 5 gives a busy search worker about a quarter of a core that the server wants too (10 gave it
#: a tenth, and under the benchmark's load a third of the searches found the queue full).
NICE = 5
#: Seconds a refused client is asked to wait before trying again (``Retry-After``).
RETRY_AFTER_S = 1
log = logging.getLogger("stb-pipeline.serve")

_positions: Any = None
"""The worker process's Positions (set by :func:`_start`; None in the server's own process)."""


class Busy(PipelineError):
    """Every search worker is busy and the queue is full (or a worker died): try again later.
    The server answers 503 with ``Retry-After: retry_after``."""

    retry_after = RETRY_AFTER_S


def _start(data_dir: str, cache_mb: int, nice: int) -> None:
    """A worker process's start: lower priority, no Ctrl-C, its own Positions."""
    from pipeline.apps.server.positions import Positions

    global _positions
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops the pool when it stops
    with contextlib.suppress(OSError):  # a platform without nice runs at the same priority
        os.nice(nice)
    _positions = Positions(Path(data_dir), cache_mb=cache_mb)


def _call(fn: Callable[..., Any], args: tuple) -> Any:
    """Run ``fn(positions, *args)`` in a worker. A domain error travels back as itself (a
    one-line message); anything else is logged here, with its traceback, and travels back as a
    plain 'internal error'."""
    try:
        return fn(_positions, *args)
    except PipelineError:
        raise
    except Exception:
        log.exception("internal error in a search worker")
        raise RuntimeError("internal error in a search worker") from None


class SearchPool:
    """A bounded pool of search processes for one server process (see the module docstring)."""

    def __init__(
        self,
        data_dir: Path,
        workers: int = DEFAULT_WORKERS,
        queue: int | None = None,
        cache_mb: int = 256,
    ) -> None:
        if workers < 1:
            raise ValueError("a search pool needs at least one worker")
        self.data_dir = Path(data_dir)
        self.workers = workers
        self.queue = queue if queue is not None else DEFAULT_QUEUE_PER_WORKER * workers
        if self.queue < workers:
            raise ValueError("the search queue must hold at least one search per worker")
        self.cache_mb = cache_mb
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._inflight = 0
        self._closed = False

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise Busy("the server is stopping")
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers,
                    # spawn: a fork of a process running an event loop and DuckDB's threads
                    # may inherit a lock held by a thread that does not exist in the child
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start,
                    initargs=(str(self.data_dir), self.cache_mb, NICE),
                )
            return self._executor

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(positions, *args)`` in a worker, awaited without blocking the event loop;
        :class:`Busy` when the queue is full or the worker died."""
        with self._lock:
            if self._inflight >= self.queue:
                raise Busy(
                    f"{self._inflight} searches are waiting or running, the most this server "
                    f"takes at once: try again in {RETRY_AFTER_S} s"
                )
            self._inflight += 1
        try:
            pool = self._pool()
            try:
                future = pool.submit(_call, fn, args)
                return await asyncio.wrap_future(future)
            except BrokenProcessPool:
                self._replace(pool)
                raise Busy("a search worker stopped; try again") from None
        finally:
            with self._lock:
                self._inflight -= 1

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Drop a pool whose worker died (the next search starts a new one)."""
        with self._lock:
            if self._executor is broken:
                self._executor = None
        log.warning("a search worker stopped; starting a new pool on the next search")
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the workers: searches still queued are cancelled, a running one is finished."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
