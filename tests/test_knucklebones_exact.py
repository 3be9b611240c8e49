"""The search's "exact" flag, checked against an independent brute force, and exact lookups.

README ("The full game, by search"): a column's value is exact only when every line searched
ends the game. Every line means every roll and every move considered at every node, not only
the moves the search chose.
"""

from __future__ import annotations

import numpy as np

from pipeline.games.knucklebones import Knucklebones, KnuckleRules
from pipeline.games.knucklebones_position import column_values
from pipeline.games.knucklebones_search import Searcher

Board = list[list[int]]


def place(mine: Board, theirs: Board, column: int, die: int) -> tuple[Board, Board]:
    """The rules written out plainly: add the die to our column, remove its value from theirs."""
    new_mine = [list(c) for c in mine]
    new_mine[column].append(die)
    new_theirs = [list(c) for c in theirs]
    new_theirs[column] = [v for v in new_theirs[column] if v != die]
    return new_mine, new_theirs


def full(board: Board, rows: int) -> bool:
    return all(len(c) == rows for c in board)


def a_line_continues(mine: Board, theirs: Board, depth: int, rules: KnuckleRules) -> bool:
    """Whether some line of ``depth`` placements (any rolls, any moves) leaves the game going.

    Plain recursion over boards, with none of the search's canonical pairs, transpositions or
    compiled code.
    """
    if full(mine, rules.rows) or full(theirs, rules.rows):
        return False
    if depth == 0:
        return True
    for die in range(1, rules.faces + 1):
        for column in range(rules.columns):
            if len(mine[column]) < rules.rows:
                after_mine, after_theirs = place(mine, theirs, column, die)
                if a_line_continues(after_theirs, after_mine, depth - 1, rules):
                    return True
    return False


def random_position(
    rng: np.random.Generator, rules: KnuckleRules, plies: int
) -> tuple[Board, Board] | None:
    """Boards after ``plies`` random placements (mover first), or None if the game ended."""
    mine: Board = [[] for _ in range(rules.columns)]
    theirs: Board = [[] for _ in range(rules.columns)]
    for _ in range(plies):
        if full(mine, rules.rows) or full(theirs, rules.rows):
            return None
        open_cols = [c for c in range(rules.columns) if len(mine[c]) < rules.rows]
        die = int(rng.integers(1, rules.faces + 1))
        mine, theirs = place(mine, theirs, int(rng.choice(open_cols)), die)
        mine, theirs = theirs, mine
    if full(mine, rules.rows) or full(theirs, rules.rows):
        return None
    return mine, theirs


def test_exact_flag_matches_a_brute_force_check_on_random_positions() -> None:
    rules = KnuckleRules()
    game = Knucklebones(rules)
    searcher = Searcher(game)
    rng = np.random.default_rng(17)
    counts = {True: 0, False: 0}
    positions = 0
    while positions < 1000:
        found = random_position(rng, rules, int(rng.integers(12, 24)))
        if found is None:
            continue
        positions += 1
        mine, theirs = found
        pairs = game.pairs_of_boards([sorted(c) for c in mine], [sorted(c) for c in theirs])
        die = int(rng.integers(1, 7))
        depth = int(rng.integers(1, 4))
        for cv in column_values(searcher, pairs, die, depth):
            after_mine, after_theirs = place(mine, theirs, cv.column - 1, die)
            exact = not a_line_continues(after_theirs, after_mine, depth - 1, rules)
            assert cv.value.exact == exact, (mine, theirs, die, depth, cv.column)
            counts[exact] += 1
    # Both answers occur often enough for the comparison to mean something.
    assert counts[True] > 150 and counts[False] > 150, counts
