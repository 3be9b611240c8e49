"""Domain errors. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name where it has none): what a one-line
    error quotes of a library's exception."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


#: What an interrupted command says (Ctrl-C, SIGTERM, SIGHUP), exit 130.
INTERRUPTED = "interrupted; every table on disk is complete (old or new)"


class PipelineError(Exception):
    """Base class: a problem the user can fix. ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class UsageError(PipelineError, ValueError):
    """Bad input: malformed tiles, impossible roll, unknown variant, contradictory rules."""

    exit_code = 2


class UnknownVariantError(UsageError):
    """A variant name no family knows and no data directory holds: bad input (exit 2); the
    server answers it 404 (no such page), not 400."""


class TablesMissingError(PipelineError):
    """The tables a command reads have not been built (or lack the variant asked for)."""

    exit_code = 2


class TableError(PipelineError):
    """A table on disk is unreadable, foreign or truncated (exit 1)."""


class ArtefactError(PipelineError):
    """A file the package reads that is not what it must be: an evaluator, opening book or
    labelled set that is damaged, of another board, or holds values out of range (one line
    naming the file). Exit 1, as for a table that cannot be read."""


class ContractError(PipelineError):
    """`verify` found tables that break a data contract (queries/contracts/)."""

    exit_code = 3


class PluginError(PipelineError):
    """An installed game family (a plugin) that failed: its variant's game could not be made,
    or its code raised. Exit 1: the installation is at fault, not the input."""


class OutputError(PipelineError):
    """Standard output cannot be written: closed (``>&-``), or its disk is full (``> /dev/full``).
    Exit 1, as for any file that cannot be written."""


class GuardedStdout:
    """Standard output that turns a failed write into an :class:`OutputError` (one line on
    stderr, exit 1) instead of an internal error. A reader gone away (``| head``) is still a
    BrokenPipeError, which ends the command quietly. Everything else goes to the real stream."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.failed = False  # a write failed: what is left in the buffer can never be written

    @property
    def stream(self) -> Any:
        """The real stream; OutputError when standard output was closed before we started."""
        if self._stream is None:
            self.failed = True
            raise OutputError("cannot write to standard output: it is closed")
        return self._stream

    def write(self, text: str) -> int:
        return int(self._guarded(self.stream.write, text))

    def flush(self) -> None:
        if self._stream is not None:
            self._guarded(self._stream.flush)

    def _guarded(self, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)`` on the real stream: a reader gone away stays a BrokenPipeError, any
        other failure (a full disk) becomes an OutputError; either marks the stream failed."""
        try:
            return call(*args)
        except BrokenPipeError:
            self.failed = True
            raise
        except OSError as exc:
            self.failed = True
            raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def exit_with(command: Callable[[], int]) -> NoReturn:
    """Run a console command and exit with its code. When stdout's reader goes away (``| head``)
    the final flush is silenced and the exit code is 141, as in a shell pipeline: no traceback.
    When stdout cannot be written (closed, a full disk) the command's own error handling says so
    in one line (exit 1); a failure of the last flush is said here."""
    real = sys.stdout
    guard = GuardedStdout(real)
    sys.stdout = guard  # type: ignore[assignment]
    try:
        code = command()
        sys.stdout.flush()
    except BrokenPipeError:
        guard.failed = True
        code = 141
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exc.exit_code
    finally:
        sys.stdout = real
    if guard.failed:  # what is still buffered would fail again at exit, with a traceback
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), real.fileno())
    sys.exit(code)
