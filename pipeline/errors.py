"""Domain errors. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations


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


def quiet_broken_pipe() -> int:
    """After stdout's reader went away (``| head``): silence the final flush, exit 141 like
    a shell pipeline, and print no traceback."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141
