"""Questions about one full-size Knucklebones position: the best column, the search tree, play.

Boards are written column by column or as the Rust solver's rows of squares (see
:func:`pipeline.games.knucklebones.game.read_board`); the first board is the player about to place
the die. Column numbers in answers are the user's own columns, 1-based.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline import progress
from pipeline.apps.knucklebones import MAX_DEPTH
from pipeline.apps.knucklebones.known import TableLookup, load_known, open_lookup
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import (
    EMPTY_COLUMN,
    MAX_GRAPH_STATES,
    Knucklebones,
    KnuckleRules,
    read_board,
)
from pipeline.games.knucklebones.search import OURS, Eval, Searcher
from pipeline.games.registry import get_variant


@dataclass(frozen=True)
class ColumnValue:
    """One legal column for the die and its evaluation."""

    column: int
    """1-based column number on the user's board."""
    value: Eval


@dataclass(frozen=True)
class Analysis:
    """The answer to `knucklebones solve`."""

    die: int
    depth: int
    mover_score: int
    opponent_score: int
    best: ColumnValue
    columns: list[ColumnValue]
    """Every legal column, in column order."""
    tables: tuple[str, ...] = ()
    """The variants whose exact values were looked up (empty: searched only)."""


def position_pairs(game: Knucklebones, board1: str, board2: str) -> np.ndarray:
    """Facing pairs of two boards (column order kept); UsageError for impossible boards."""
    mine = read_board(board1, game.r, "BOARD1")
    theirs = read_board(board2, game.r, "BOARD2")
    pairs = game.pairs_of_boards(mine, theirs)
    if game.finished(pairs):
        raise UsageError("the game is over: a board is full")
    return pairs


def check_die(game: Knucklebones, die: int) -> None:
    """UsageError unless ``die`` is a face of the die."""
    if not 1 <= die <= game.r.faces:
        raise UsageError(f"die {die} is not a face 1..{game.r.faces}")


def check_depth(depth: int) -> None:
    """UsageError unless the depth is searchable."""
    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"--depth must be between 1 and {MAX_DEPTH}, not {depth}")


def column_values(searcher: Searcher, pairs: np.ndarray, die: int, depth: int) -> list[ColumnValue]:
    """The evaluation of every legal column of the user's board, in column order."""
    srt = np.sort(pairs)
    by_pair = {int(srt[j]): ev for j, ev in searcher.move_values(pairs, die, depth, OURS)}
    return [ColumnValue(i + 1, by_pair[int(p)]) for i, p in enumerate(pairs) if int(p) in by_pair]


def pick(values: list[ColumnValue]) -> ColumnValue:
    """The best column: highest win probability, then score difference, then lowest number."""
    return max(values, key=lambda c: (round(c.value.win, 12), c.value.diff, -c.column))


def analyse(
    board1: str,
    board2: str,
    die: int,
    depth: int = 4,
    variant: str | None = None,
    data_dir: Path | None = None,
) -> Analysis:
    """The best column for ``die`` on BOARD1 facing BOARD2, searching ``depth`` placements.

    ``variant`` names a Knucklebones board and die (default: the full game). With ``data_dir``,
    positions of a board solved there (both objectives built) are looked up, not searched, and
    their values are exact.
    """
    game = knucklebones_game(variant)
    check_die(game, die)
    check_depth(depth)
    pairs = position_pairs(game, board1, board2)
    lookup = None if data_dir is None else big_board_lookup(data_dir, game)
    if lookup is not None:  # the full game built on a GPU: every column's value looked up
        values = table_column_values(game, lookup, pairs, die)
        mine, theirs = game.scores(pairs[None, :])
        return Analysis(
            die, depth, int(mine[0]), int(theirs[0]), pick(values), values, lookup.variants
        )
    known = None if data_dir is None else load_known(data_dir, game.r, game.n_states)
    searcher = Searcher(game, known=None if known is None else known.values)
    values = column_values(searcher, pairs, die, depth)
    mine, theirs = game.scores(pairs[None, :])
    used = known.variants if known is not None else ()
    return Analysis(die, depth, int(mine[0]), int(theirs[0]), pick(values), values, used)


def big_board_lookup(data_dir: Path, game: Knucklebones) -> TableLookup | None:
    """Point lookups in the built tables of a board too big to load whole (the full game,
    built by ``build --device cuda``); None for smaller boards or when not built."""
    if game.n_states <= MAX_GRAPH_STATES or not Path(data_dir).is_dir():
        return None
    return open_lookup(data_dir, game.r)


def table_column_values(
    game: Knucklebones, lookup: TableLookup, pairs: np.ndarray, die: int
) -> list[ColumnValue]:
    """Every legal column for ``die`` (the user's order) valued from the tables: a move is worth
    its successor's value seen from the other side (1 - P(win), -E[difference]), exactly."""
    moves = game.successors(pairs, die)
    if not moves:
        return []
    found = lookup.values(game.canonical(np.array([after for _, after in moves])))
    return [
        ColumnValue(c + 1, Eval(1.0 - float(w), -float(d), True, True))
        for (c, _), (w, d) in zip(moves, found, strict=True)
    ]


def knucklebones_game(variant: str | None) -> Knucklebones:
    """The game of a registered Knucklebones variant (None: the full 3x3 game)."""
    if variant is None:
        return Knucklebones(KnuckleRules())
    game = get_variant(variant).make()
    if not isinstance(game, Knucklebones):
        raise UsageError(f"variant {variant!r} is not a Knucklebones board")
    # Only the board and die matter: the search maximises the win chance, then the difference.
    return Knucklebones(KnuckleRules(game.r.columns, game.r.rows, game.r.faces))


@dataclass
class TreeNode:
    """A line of the search tree: a label, its evaluation (mover of the root's view), children."""

    label: str
    value: Eval | None
    children: list[TreeNode]


def search_tree(
    board1: str, board2: str, die: int, depth: int = 2, data_dir: Path | None = None
) -> TreeNode:
    """The search tree of `solve` to ``depth`` placements, values from the root mover's view;
    with the full game's tables in ``data_dir`` every value is looked up (exact)."""
    game = Knucklebones(KnuckleRules())
    check_die(game, die)
    check_depth(depth)
    if depth > 3:
        raise UsageError("tree prints every line: use --depth 3 or less (solve searches deeper)")
    searcher = Searcher(game)
    lookup = None if data_dir is None else big_board_lookup(data_dir, game)
    pairs = position_pairs(game, board1, board2)
    root = TreeNode(f"die {die}", None, [])
    _grow(game, searcher, root, pairs, die, depth, mover_is_root=True, lookup=lookup)
    return root


def _grow(
    game: Knucklebones,
    searcher: Searcher,
    node: TreeNode,
    pairs: np.ndarray,
    die: int,
    depth: int,
    mover_is_root: bool,
    lookup: TableLookup | None = None,
) -> None:
    """Add the moves of (pairs, die) under ``node`` and, below each, every roll of the reply."""
    who = "we" if mover_is_root else "they"
    values = (
        table_column_values(game, lookup, pairs, die)
        if lookup is not None
        else column_values(searcher, pairs, die, depth)
    )
    best = pick(values).column
    for cv in values:
        v = cv.value
        ev = v if mover_is_root else Eval(1 - v.win, -v.diff, v.exact, v.from_tables)
        mark = " (best)" if cv.column == best else ""
        child = TreeNode(f"{who} play column {cv.column}{mark}", ev, [])
        node.children.append(child)
        seen = game.play(pairs, cv.column - 1, die)
        if depth == 1 or game.finished(seen):
            continue
        for face in range(1, game.r.faces + 1):
            roll = TreeNode(f"{'they' if mover_is_root else 'we'} roll {face}", None, [])
            child.children.append(roll)
            _grow(game, searcher, roll, seen, face, depth - 1, not mover_is_root, lookup)


def board_rows(game: Knucklebones, pairs: np.ndarray, mover: bool) -> list[str]:
    """A board drawn as rows of dice (``_`` for an empty slot), columns left to right."""
    cols = game.t.pair_mover[pairs] if mover else game.t.pair_opp[pairs]
    texts = [game.t.column_text(int(c)).replace(EMPTY_COLUMN, "") for c in cols]
    return [" ".join(t[r] if r < len(t) else "_" for t in texts) for r in range(game.r.rows)]


def play(
    read_line: Callable[[str], str | None],
    write: Callable[[str], None],
    seed: int = 0,
    depth: int = 4,
    human_first: bool = True,
    data_dir: Path | None = None,
) -> int:
    """Play one game in the terminal against the solver; return the human's score difference
    when it ends (or when the input does).

    ``read_line(prompt)`` returns the next line typed (None at the end of input); ``write``
    prints one line. Dice come from a generator seeded with ``seed``. With ``data_dir`` holding
    the full game's tables (``build --device cuda``) the solver plays perfectly: every move
    looked up, none searched.
    """
    check_depth(depth)
    if not 0 <= seed < 2**63:
        raise UsageError(f"--seed must be between 0 and {2**63 - 1}, not {seed}")
    game = Knucklebones(KnuckleRules())
    searcher = Searcher(game)
    lookup = None if data_dir is None else big_board_lookup(data_dir, game)
    rng = np.random.default_rng(seed)
    pairs = np.zeros(game.r.columns, dtype=np.int64)  # always from the human's view
    human_turn = human_first
    how = "exact: from the tables" if lookup is not None else f"depth {depth}, exact: no"
    write(f"Knucklebones: you against the solver ({how}), seed {seed}")
    while not game.finished(pairs):
        face = int(rng.integers(1, game.r.faces + 1))
        if human_turn:
            _show(game, pairs, write)
            col = _ask_column(game, pairs, face, read_line, write)
            if col is None:  # end of input stops the game cleanly, like `stb-pipeline play`
                mine, theirs = game.scores(pairs[None, :])
                write("(end of input: game stopped)")
                return int(mine[0] - theirs[0])
            view = pairs
        else:
            view = game.t.swap[pairs]
            if lookup is not None:
                col = pick(table_column_values(game, lookup, view, face)).column - 1
            else:
                with progress.task(f"solver searching {depth} placements deep"):
                    col, _ = searcher.best_move(view, face, depth, OURS)
            write(f"solver rolls {face} and plays column {col + 1}")
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
    mine, theirs = game.scores(pairs[None, :])
    write(f"solver ({int(theirs[0])})")
    for row in board_rows(game, pairs, mover=False):
        write(f"  {row}")
    write(f"you ({int(mine[0])})")
    for row in board_rows(game, pairs, mover=True):
        write(f"  {row}")


def _ask_column(
    game: Knucklebones,
    pairs: np.ndarray,
    face: int,
    read_line: Callable[[str], str | None],
    write: Callable[[str], None],
) -> int | None:
    """The 0-based column the human picks for ``face`` (asks again after a bad answer);
    None at the end of input."""
    legal = [int(i) + 1 for i in game.legal_columns(pairs)]
    choices = "/".join(map(str, legal))
    while True:
        line = read_line(f"you rolled {face}: column {choices}? ")
        if line is None:
            return None
        text = line.strip()
        if text.isascii() and text.isdigit() and len(text) < 10 and int(text) in legal:
            return int(text) - 1
        write(f"'{text}' is not a column you can play: choose {choices}")
