"""Help a person can read (issue 16): every command's help fits on one screen, shows one example
that parses as written, has no markup accidents or type noise, and the custom rule options are
shown once (`stb-pipeline rules`) yet accepted everywhere."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.cli.app import command

#: One screen of a terminal.
MAX_LINES = 50


def every_command() -> Iterator[tuple[list[str], Any]]:
    """(path of words after `stb-pipeline`, click command) for the root and every subcommand."""
    todo: list[tuple[list[str], Any]] = [([], command())]
    while todo:
        path, cmd = todo.pop()
        yield path, cmd
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not sub.hidden:
                todo.append(([*path, name], sub))


COMMANDS = list(every_command())


def example_of(text: str) -> str:
    """The command of the help's `Example:` line (after any `|`: the part that runs ours)."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("Example:")]
    assert len(lines) == 1, f"one Example line, found {len(lines)}"
    return lines[0].removeprefix("Example:").split("|")[-1].strip()


def parse(words: list[str]) -> None:
    """Parse `stb-pipeline WORDS` down to its command without running it (errors raise)."""
    cmd: Any = command()
    ctx = cmd.make_context("stb-pipeline", list(words), resilient_parsing=False)
    while hasattr(cmd, "commands") and _rest(ctx):
        rest = _rest(ctx)
        name, cmd, rest = cmd.resolve_command(ctx, rest)
        ctx = cmd.make_context(name, rest, parent=ctx)


def _rest(ctx: Any) -> list[str]:
    """The words a group left for its subcommand (click keeps the first one apart)."""
    return [*getattr(ctx, "_protected_args", getattr(ctx, "protected_args", [])), *ctx.args]


@pytest.mark.parametrize(
    ("path", "cmd"), COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS]
)
def test_help_fits_a_screen_and_has_an_example_that_parses(cli, path: list[str], cmd: Any) -> None:
    result = cli([*path, "--help"])
    assert result.code == 0, result.stderr
    text = result.stdout
    assert len(text.splitlines()) <= MAX_LINES, f"{path}: {len(text.splitlines())} lines"
    for noise in ("<bool>", "<str>", "<int>", "<path>", "<list", "[/", "╭"):
        assert noise not in text, f"{path}: {noise!r} in the help"
    words = shlex.split(example_of(text))
    assert words[0] == "stb-pipeline" and words[1 : 1 + len(path)] == path, words
    parse(words[1:])


def test_custom_rule_options_are_hidden_but_accepted_and_shown_by_rules(cli) -> None:
    assert "--one-die-sum" not in cli(["build", "--help"]).stdout
    shown = cli(["rules"]).stdout
    for option in ("--tiles", "--one-die-sum", "--objective", "--name"):
        assert option in shown
    assert "E[score]" in shown  # no markup accident
    parse(["expect", "--tiles", "12", "--dice", "3", "1,2,10"])


def test_options_that_do_nothing_are_gone(cli) -> None:
    for stage in ("enumerate", "edges", "policy"):
        assert "--exact" not in cli([stage, "--help"]).stdout
    assert "--exact" in cli(["solve", "--help"]).stdout


@pytest.mark.parametrize(
    ("path", "cmd"), COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS]
)
def test_the_example_comes_last(cli, path: list[str], cmd: Any) -> None:
    """Issue 41: every help had its example above the options; a reader looks for it last."""
    lines = cli([*path, "--help"]).stdout.rstrip().splitlines()
    assert lines[-1].strip().startswith("Example: ") and "stb-pipeline" in lines[-1], lines[-3:]
    assert any(line.startswith(("Options:", "Arguments:")) for line in lines[:-1])


def test_version(cli) -> None:
    from pipeline._version import __version__

    result = cli(["--version"])
    assert result.code == 0 and result.stdout == f"stb-pipeline {__version__}\n"


def test_knucklebones_help_says_where_its_answers_come_from(cli) -> None:
    """Issue 39: the group's help said "by expectimax search" after the exact tables, their
    solve and their checks had joined it."""
    text = " ".join(cli(["knucklebones", "--help"]).stdout.split())
    assert "by expectimax search" not in text
    assert "exact answers from the solved tables" in text and "expectimax search" in text


def test_numbers_are_shown_as_numbers() -> None:
    """Issue 48: `serve --help` showed `--port TEXT` (an int option with a range)."""
    for path, cmd in COMMANDS:
        for param in cmd.params:
            kind = getattr(param.type, "name", "")
            if kind in ("integer", "int range", "float", "float range"):
                assert param.metavar in ("N", "X"), (path, param.name, param.metavar)
