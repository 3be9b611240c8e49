"""One worker thread that runs tasks in order, so that writing overlaps computing.

Encoding Parquet (pyarrow) and building Arrow tables (polars) release the GIL, so on two cores
the build computes the next variant while the worker writes the last one. The queue is short:
the producer waits rather than piling up rows in memory.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_DONE = object()


class Background:
    """Runs submitted calls one after another on a worker thread.

    A call that raises stops the worker; the error is raised again in the producer at its next
    :meth:`submit` or at :meth:`wait`. :meth:`close` stops the worker after its current call.
    """

    def __init__(self, depth: int = 2, name: str = "stb-writer") -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __enter__(self) -> Background:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue ``fn(*args)``; wait while the queue is full; raise the worker's error."""
        self._put((fn, args))

    def wait(self) -> None:
        """Wait until every queued call has run; raise the worker's error, if any."""
        self._put(_DONE)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop the worker after its current call (queued calls are dropped) and wait for it."""
        self._stop.set()
        self._thread.join()

    def _put(self, item: Any) -> None:
        while True:
            if self._error is not None:
                raise self._error
            if not self._thread.is_alive():
                raise RuntimeError("the writer thread has stopped")
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is _DONE:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException as exc:  # handed to the producer, which raises it
                self._error = exc
                return
