"""Signals as interrupts, for both of the console script's entry points (:mod:`pipeline.cli.lean`
and :func:`pipeline.cli.app.main`), which import nothing of each other at load."""

from __future__ import annotations

import signal


def catch_signals() -> None:
    """`kill` (SIGTERM) or a closed terminal (SIGHUP) would end the process without running any
    cleanup; as an interrupt they remove their temporary files on the way out."""
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    """Signal handler: stop as Ctrl-C does."""
    raise KeyboardInterrupt
