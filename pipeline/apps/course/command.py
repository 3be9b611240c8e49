"""`ShutTheBox`: the two-player game's command line exactly as the course assignment specifies it.

    ShutTheBox --one --expect TILES            P1's expected wins, P1 to roll with TILES open
    ShutTheBox --one --move TILES ROLL         P1's best move for ROLL, e.g. [3, 9]
    ShutTheBox --two --expect TILES P1SCORE    P2's expected wins against P1's score
    ShutTheBox --two --move TILES P1SCORE ROLL P2's best move

Expected wins count a tie as half a win and print as ``%.6f``; a move prints as the tiles to shut,
increasing, in brackets. Nothing else goes to stdout. Options ``--tiles N``, ``--dice D``,
``--sides S`` and ``--one-die-sum K`` change the rules (defaults 9, 2, 6, 6: one die once the
mover's open tiles sum to K or less, 0 for never). Answers come from the `two-player` tables in
``$STB_DATA_DIR`` (default ``./data``) when they hold a variant built with the same rules, else
from solving the game on the spot (a few hundredths of a second for the assignment's rules).
Malformed arguments print the error and a usage line on stderr and exit with 2.

Example: ShutTheBox --two --move 13456789 17 12
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from pipeline.errors import PipelineError, TableError, TablesMissingError, UsageError, exit_with
from pipeline.games.nplayer.game import NPlayer as TwoPlayer
from pipeline.games.nplayer.rules import NPlayerRules as TwoPlayerRules
from pipeline.games.nplayer.rules import course_rules

T = TypeVar("T")

PROG = "ShutTheBox"
USAGE = (
    f"usage: {PROG} (--one | --two) (--expect | --move) TILES [P1SCORE] [ROLL] "
    "[--tiles N] [--dice D] [--sides S] [--one-die-sum K]"
)
#: The rule options (``--one-die-sum``) and the rules they set (``one_die_sum``).
RULE_FLAGS = {f"--{k.replace('_', '-')}": k for k in ("tiles", "dice", "sides", "one_die_sum")}
#: Positional arguments after TILES for each (player, question).
EXTRA_ARGS = {
    (1, "expect"): (),
    (1, "move"): ("ROLL",),
    (2, "expect"): ("P1SCORE",),
    (2, "move"): ("P1SCORE", "ROLL"),
}


@dataclass(frozen=True)
class Query:
    """One question: which question, the state (P1's score for P2's) and, for a move, the roll."""

    question: str
    tiles: str
    p1_score: int | None
    roll: int | None
    rules: TwoPlayerRules


def parse_args(argv: list[str]) -> Query:
    """The query the arguments ask; UsageError saying what is wrong otherwise."""
    flags: set[str] = set()
    rules: dict[str, int] = {}
    positional: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, inline = arg.partition("=")
        if name in RULE_FLAGS:
            if not eq and not args:
                raise UsageError(f"{name} needs a number")
            rules[RULE_FLAGS[name]] = to_int(inline if eq else args.pop(0), name)
        elif arg in ("--one", "--two", "--expect", "--move"):
            if arg in flags:
                raise UsageError(f"{arg} is given twice")
            flags.add(arg)
        elif arg.startswith("--") or (arg.startswith("-") and not arg[1:].isdigit()):
            raise UsageError(f"unknown option {arg}")
        else:
            positional.append(arg)
    player = exactly_one(flags, {"--one": 1, "--two": 2})
    question = exactly_one(flags, {"--expect": "expect", "--move": "move"})
    names = ("TILES", *EXTRA_ARGS[(player, question)])
    if len(positional) != len(names):
        raise UsageError(
            f"--{'one' if player == 1 else 'two'} --{question} takes {' '.join(names)}"
        )
    values = dict(zip(names, positional, strict=True))
    return Query(
        question,
        values["TILES"],
        to_int(values["P1SCORE"], "P1SCORE") if "P1SCORE" in values else None,
        to_int(values["ROLL"], "ROLL") if "ROLL" in values else None,
        course_rules(**rules),
    )


def exactly_one(flags: set[str], options: dict[str, T]) -> T:
    """The value of the one flag of ``options`` present in ``flags``."""
    given = [flag for flag in options if flag in flags]
    if len(given) != 1:
        raise UsageError(f"give exactly one of {' or '.join(options)}")
    return options[given[0]]


#: Digits an integer argument may have: every sensible tile count, score or roll has fewer, and
#: a longer one would overflow the 64-bit arrays it is compared with.
MAX_DIGITS = 9


def to_int(text: str, what: str) -> int:
    """An integer argument; UsageError when malformed or past any sensible size."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{what} must be an integer, not {text!r}") from None
    if len(str(abs(value))) > MAX_DIGITS:
        raise UsageError(f"{what} {text!r} is out of range")
    return value


def answer(query: Query, data_dir: Path) -> str:
    """The line to print: ``%.6f`` expected wins, or a move such as ``[3, 9]``."""
    game = TwoPlayer(query.rules)
    state_id = game.parse_state(query.tiles, p1_score=query.p1_score)
    tables = TableSource.find(data_dir, game)
    if tables is not None:
        try:
            return _line(tables, query, state_id)
        except TableUnreadable:
            pass  # a damaged table: the solve below gives the same answer
    return _line(SolvedSource(game), query, state_id)


def _line(source: SolvedSource | TableSource, query: Query, state_id: int) -> str:
    """The line to print for the query, from a source's ``value`` and ``best_move``."""
    if query.question == "expect":
        return f"{source.value(state_id):.6f}"
    assert query.roll is not None
    move = source.best_move(state_id, query.roll)
    return "[" + ", ".join(str(t) for t in move) + "]"


class TableUnreadable(Exception):
    """A table that was found could not be read after all."""


class SolvedSource:
    """Answers from solving the game in memory."""

    def __init__(self, game: TwoPlayer) -> None:
        from pipeline.solve.rank_order import best_moves, solve_rank_order

        self.game = game
        self.g = game.graph()
        self.sol = solve_rank_order(self.g)
        self.best, _ = best_moves(self.g, self.sol)

    def index(self, state_id: int) -> int:
        """Graph index of a state id (ids are sorted)."""
        i = int(np.searchsorted(self.g.state_id, state_id))
        if i == self.g.n_states or self.g.state_id[i] != state_id:
            raise UsageError(f"state {state_id} is not in the game")  # parse_state prevents this
        return i

    def value(self, state_id: int) -> float:
        """The mover's expected wins."""
        return float(self.sol.value[self.index(state_id)])

    def best_move(self, state_id: int, roll: int) -> list[int]:
        """The tiles of the best move for a roll."""
        i = self.index(state_id)
        if not np.isnan(self.g.terminal[i]):
            raise UsageError(game_over(self.game, state_id))
        node = np.flatnonzero((self.g.node_state == i) & (self.g.node_roll == roll))
        if node.shape[0] == 0:
            raise UsageError(impossible_roll(self.g.node_roll[self.g.node_state == i], roll))
        label = int(self.g.mv_label[self.best[node[0]]])
        if label < 0:
            raise UsageError(f"no open tiles make {roll}: there is no move, the turn ends")
        return [t for t in range(1, self.game.r.box.tiles + 1) if label >> (t - 1) & 1]


class TableSource:
    """Answers from the built tables of a variant with the same rules: the library's one answer
    (:mod:`pipeline.answer`), as `expect` and `move` give it."""

    def __init__(self, answers: Any, variant: Any, game: TwoPlayer) -> None:
        self.answers, self.variant, self.game = answers, variant, game

    @classmethod
    def find(cls, data_dir: Path, game: TwoPlayer) -> TableSource | None:
        """The tables of a variant built with ``game``'s rules (the data directory's snapshot:
        :mod:`pipeline.store.directory`), or None (also when unreadable)."""
        from pipeline.answer.answers import one_shot
        from pipeline.store import directory

        if not data_dir.is_dir():
            return None
        try:
            name = directory.of(data_dir).find(game.rules())
            if name is None:
                return None
            answers = one_shot(data_dir)
            return cls(answers, answers.variant(name), game)
        except PipelineError:
            return None

    def _answer(self, state_id: int, roll: int | None = None) -> Any:
        """The library's answer for the state (and roll); TableUnreadable where its tables
        cannot be read after all."""
        try:
            return self.answers.position(self.variant, state_id=state_id, roll=roll)
        except (TableError, TablesMissingError) as exc:
            raise TableUnreadable(str(exc)) from None

    def value(self, state_id: int) -> float:
        """The mover's expected wins."""
        return float(self._answer(state_id).state.value)

    def best_move(self, state_id: int, roll: int) -> list[int]:
        """The tiles of the best move for a roll."""
        found = self._answer(state_id)
        if found.state.terminal:
            raise UsageError(game_over(self.game, state_id))
        rolls = [r.roll for r in found.rolls]
        if roll not in rolls:
            raise UsageError(impossible_roll(np.array(rolls), roll))
        best = self._answer(state_id, roll).best_move
        if best is None:
            raise UsageError(f"no open tiles make {roll}: there is no move, the turn ends")
        return [int(t) for t in best]


def game_over(game: TwoPlayer, state_id: int) -> str:
    """Why a terminal state has no move."""
    _, score = game.split_ids(np.array([state_id]))
    if score[0] == 0:
        return "player 1 has shut the box: the game is over"
    return "player 2's open tiles are already below player 1's score: the game is over"


def impossible_roll(rolls: np.ndarray, roll: int) -> str:
    """Which rolls are possible instead."""
    low, high = int(rolls.min()), int(rolls.max())
    return f"roll {roll} is impossible here (possible rolls: {low}..{high})"


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code (0, or 2 for bad arguments)."""
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.rstrip() if __doc__ else USAGE)
        return 0
    try:
        line = answer(parse_args(args), Path(os.environ.get("STB_DATA_DIR", "data")))
    except PipelineError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return exc.exit_code
    print(line)
    return 0


def entry() -> None:
    """Console-script entry point."""
    exit_with(main)


if __name__ == "__main__":
    entry()
