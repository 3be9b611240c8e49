"""Domain errors. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn


class PipelineError(Exception):
    """Base class: a problem the user can fix. ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class UsageError(PipelineError, ValueError):
    """Bad input: malformed tiles, impossible roll, unknown variant, contradictory rules."""

    exit_code = 2


class TablesMissingError(PipelineError):
    """The tables a command reads have not been built (or lack the variant asked for)."""

    exit_code = 2


class TableError(PipelineError):
    """A table on disk is unreadable, foreign or truncated."""

    exit_code = 1


class ContractError(PipelineError):
    """`verify` found tables that break a data contract (queries/contracts/)."""

    exit_code = 3


def exit_with(command: Callable[[], int]) -> NoReturn:
    """Run a console command and exit with its code. When stdout's reader goes away (``| head``)
    the final flush is silenced and the exit code is 141, as in a shell pipeline: no traceback."""
    try:
        code = command()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141
    sys.exit(code)
