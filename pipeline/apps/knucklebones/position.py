"""One Knucklebones position on the command line: `knucklebones solve`, its search `tree` and a
game to `play` against the solver, each asking the one answer
(:meth:`pipeline.answer.answers.Answers.board`, :mod:`pipeline.answer.boards`) and formatting
what it returns: exact from the board's tables where they are built in the data directory, else
the search's estimate.

Boards are written column by column or as the Rust solver's rows of squares (see
:func:`pipeline.games.knucklebones.numbering.read_board`); the first board is the player about
to place the die. Column numbers in answers are the user's own columns, 1-based.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline import progress
from pipeline.answer.answers import Answers, for_dir
from pipeline.answer.model import BoardAnswer
from pipeline.errors import UsageError
from pipeline.games.knucklebones import DEEPEST
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.numbering import EMPTY_COLUMN
from pipeline.games.registry import Variant, get_variant

#: The variant `solve`, `tree` and `play` answer when none is named: the full game (P(win)).
FULL_GAME = "knucklebones"


def board_variant(variant: str | None) -> Variant:
    """A registered Knucklebones variant by name (None: the full game); UsageError for a
    variant of another game."""
    found = get_variant(variant or FULL_GAME)
    if found.family != "knucklebones":
        raise UsageError(f"variant {found.name!r} is not a Knucklebones board")
    return found


def check_die(faces: int, die: int) -> None:
    """UsageError unless ``die`` is a face of the die."""
    if not 1 <= die <= faces:
        raise UsageError(f"die {die} is not a face 1..{faces}")


def check_depth(depth: int) -> None:
    """UsageError unless the depth is searchable."""
    if not 1 <= depth <= DEEPEST:
        raise UsageError(f"--depth must be between 1 and {DEEPEST}, not {depth}")


@dataclass(frozen=True)
class Asked:
    """Where a command's answers come from: the data directory's answers, the variant, and
    whether its tables may be read (False: searched all the same, ``--no-tables``)."""

    answers: Answers
    variant: Variant
    tables: bool

    @property
    def rules(self) -> Any:
        """The variant's board rules (:class:`pipeline.games.knucklebones.columns.BoardRules`)."""
        return self.answers.board_rules(self.variant)

    def board(self, position: Any, die: int, depth: int | None) -> BoardAnswer:
        """The one answer for ``position`` (a board rules' position) and ``die``: the tables
        looked for (built None), or searched all the same (built False)."""
        built = None if self.tables else False
        return self.answers.board(self.variant, position, die, depth, built)


def asked(variant: str | None, data_dir: Path | None, tables: bool = True) -> Asked:
    """The answers of ``data_dir`` (None: no tables, searched) for a Knucklebones variant."""
    use = data_dir is not None and tables
    return Asked(
        for_dir(Path(data_dir) if data_dir is not None else Path(".")), board_variant(variant), use
    )


def position_of(found: Asked, board1: str, board2: str) -> Any:
    """The position of BOARD1 (the mover) facing BOARD2; UsageError for impossible boards or a
    finished game."""
    rules = found.rules
    here = rules.boards(board1, board2, ("BOARD1", "BOARD2"))
    if rules.over(here):
        raise UsageError("the game is over: a board is full")
    return here


def solve(
    board1: str,
    board2: str,
    die: int,
    depth: int | None = None,
    variant: str | None = None,
    data_dir: Path | None = None,
    tables: bool = True,
) -> BoardAnswer:
    """The one answer for ``die`` on BOARD1 facing BOARD2: every legal column ranked, exact
    where ``variant``'s board (default: the full game) is built in ``data_dir`` (``tables``
    False, or no ``data_dir``: searched), else the search's estimate ``depth`` placements
    deep. `knucklebones solve` prints it, ``pipeline.knucklebones_column`` returns it."""
    found = asked(variant, data_dir, tables)
    check_die(found.rules.faces, die)
    if depth is not None:
        check_depth(depth)
    return found.board(position_of(found, board1, board2), die, depth)


@dataclass(frozen=True)
class Shown:
    """A value as a line of the tree shows it (from the root mover's view)."""

    win: float | None
    diff: float | None
    exact: bool
    looked_up: str
    """Where an exact value was looked up: ``tables``, ``book``, or "" (searched)."""


@dataclass
class TreeNode:
    """A line of the search tree: a label, its value (the root mover's view), children."""

    label: str
    value: Shown | None
    children: list[TreeNode]


def search_tree(
    board1: str,
    board2: str,
    die: int,
    depth: int = 2,
    data_dir: Path | None = None,
    variant: str | None = None,
) -> TreeNode:
    """`solve`'s tree to ``depth`` placements: each column, each reply roll, each reply, every
    node the one answer for its position (so the root's columns are `solve`'s at ``depth``),
    values from the root mover's view; exact at every line where the board's tables are built
    in ``data_dir``."""
    found = asked(variant, data_dir)
    check_die(found.rules.faces, die)
    check_depth(depth)
    if depth > 3:
        raise UsageError("tree prints every line: use --depth 3 or less (solve searches deeper)")
    root = TreeNode(f"die {die}", None, [])
    _grow(found, root, position_of(found, board1, board2), die, depth, mover_is_root=True)
    return root


def _grow(
    found: Asked, node: TreeNode, here: Any, die: int, depth: int, mover_is_root: bool
) -> None:
    """Add the columns of (``here``, ``die``) under ``node`` and, below each, every roll of the
    reply."""
    rules = found.rules
    who = "we" if mover_is_root else "they"
    answer = found.board(here, die, depth)
    after = dict(rules.successors(here, die))
    for c in sorted(answer.columns, key=lambda c: c.column):
        win, diff = c.win, c.diff
        if not mover_is_root:  # their value, seen from the root mover's side
            win = None if win is None else 1 - win
            diff = None if diff is None else -diff
        mark = " (best)" if c.best else ""
        child = TreeNode(
            f"{who} play column {c.column}{mark}",
            Shown(win, diff, c.exact, answer.source if answer.exact else ""),
            [],
        )
        node.children.append(child)
        seen = after[c.column]
        if depth == 1 or rules.over(seen):
            continue
        for face in range(1, rules.faces + 1):
            roll = TreeNode(f"{'they' if mover_is_root else 'we'} roll {face}", None, [])
            child.children.append(roll)
            _grow(found, roll, seen, face, depth - 1, not mover_is_root)


def play(
    read_line: Callable[[str], str | None],
    write: Callable[[str], None],
    seed: int = 0,
    depth: int | None = None,
    human_first: bool = True,
    data_dir: Path | None = None,
    variant: str | None = None,
) -> int:
    """Play one game in the terminal against the solver; return the human's score difference
    when it ends (or when the input does).

    ``read_line(prompt)`` returns the next line typed (None at the end of input); ``write``
    prints one line. Dice come from a generator seeded with ``seed``. The solver's column is the
    one answer's pick: with ``variant``'s board (default: the full game) built in ``data_dir``
    it plays perfectly, every move looked up; otherwise it searches ``depth`` placements.
    """
    if depth is not None:
        check_depth(depth)
    if not 0 <= seed < 2**63:
        raise UsageError(f"--seed must be between 0 and {2**63 - 1}, not {seed}")
    found = asked(variant, data_dir)
    rules = found.rules
    game: Knucklebones = rules.game
    exact = found.tables and found.answers.boards.found(found.variant).own is not None
    rng = np.random.default_rng(seed)
    pairs = np.zeros(game.r.columns, dtype=np.int64)  # always from the human's view
    human_turn = human_first
    depth = depth or found.answers.boards.depth_of(rules)
    how = "exact: from the tables" if exact else f"{rules.player}-d{depth}: searched"
    write(f"Knucklebones: you against the solver ({how}), seed {seed}")
    while not game.finished(pairs):
        face = int(rng.integers(1, game.r.faces + 1))
        if human_turn:
            _show(game, pairs, write)
            col = _ask_column(game, pairs, face, read_line, write)
            if col is None or col == QUIT:  # stops cleanly, like `stb-pipeline play`
                mine, theirs = game.scores(pairs[None, :])
                write("(you quit: game stopped)" if col == QUIT else "(end of input: game stopped)")
                return int(mine[0] - theirs[0])
            view = pairs
        else:
            view = game.t.swap[pairs]
            with progress.task(
                "solver looking up its column" if exact else f"solver searching {depth} deep"
            ):
                best = found.board(rules.position_of(view), face, depth).best
            assert best is not None  # the game goes on: some column is legal
            col = best.column - 1
            write(f"solver rolls {face} and plays column {best.column}")
        after = game.play(view, col, face)  # the other player's view
        pairs = game.t.swap[after] if human_turn else after
        human_turn = not human_turn
    _show(game, pairs, write)
    mine, theirs = game.scores(pairs[None, :])
    diff = int(mine[0] - theirs[0])
    verdict = "you win" if diff > 0 else "you lose" if diff < 0 else "a draw"
    write(f"game over: you {int(mine[0])}, solver {int(theirs[0])}: {verdict}")
    return diff


def _show(game: Knucklebones, pairs: np.ndarray, write: Callable[[str], None]) -> None:
    """Both boards drawn as rows of dice (``_`` for an empty slot), columns left to right."""
    mine, theirs = game.scores(pairs[None, :])
    for who, score, mover in (("solver", theirs, False), ("you", mine, True)):
        write(f"{who} ({int(score[0])})")
        cols = game.t.pair_mover[pairs] if mover else game.t.pair_opp[pairs]
        texts = [game.t.column_text(int(c)).replace(EMPTY_COLUMN, "") for c in cols]
        for r in range(game.r.rows):
            write("  " + " ".join(t[r] if r < len(t) else "_" for t in texts))


def _ask_column(
    game: Knucklebones,
    pairs: np.ndarray,
    face: int,
    read_line: Callable[[str], str | None],
    write: Callable[[str], None],
) -> int | None:
    """The 0-based column the human picks for ``face`` (asks again after a bad answer);
    :data:`QUIT` for ``q``; None at the end of input."""
    legal = [int(i) + 1 for i in game.legal_columns(pairs)]
    choices = "/".join(map(str, legal))
    while True:
        line = read_line(f"you rolled {face}: column {choices} (q quits)? ")
        if line is None:
            return None
        text = line.strip()
        if text.lower() in ("q", "quit", "exit"):
            return QUIT
        if text.isascii() and text.isdigit() and len(text) < 10 and int(text) in legal:
            return int(text) - 1
        write(f"'{text}' is not a column you can play: choose {choices}, or q to quit")


#: What :func:`_ask_column` returns when the player quits (``q``).
QUIT = -1
