"""Seed 004's board text (rows of squares, `_` empty) beside our columns-with-'/' format.

Seed 004_4436d6a68a1265db.txt, "Usage", solves from the empty position with
    knucklebones-solver.exe solve "___
    ___
    ___"
    ...
    5
(each board three lines of three squares). Its "(0, 2), (1, 2)" is two dice stacked in one
column, so a square is (row, column) and a line is a row.
"""

from __future__ import annotations

import pytest

from pipeline.apps.knucklebones.position import search_tree, solve
from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import KnuckleRules
from pipeline.games.knucklebones.numbering import read_board

SEED_EMPTY = "___\n___\n___"  # seed 004's empty board, real newlines as its shell passes them
SEED_EMPTY_ESCAPED = r"___\n___\n___"  # the same typed as backslash-n in one shell word


def test_seed_example_reads_as_the_empty_board() -> None:
    r = KnuckleRules()
    assert read_board(SEED_EMPTY, r) == read_board(SEED_EMPTY_ESCAPED, r) == [[], [], []]
    assert read_board("___/___/___", r) == [[], [], []]


def test_lines_are_rows_and_characters_columns() -> None:
    r = KnuckleRules()
    # Column 1 holds 4, 4 (rows 1 and 2), column 2 a 1: the board 44_/1__/___.
    assert read_board("41_\n4__\n___", r) == read_board("44_/1__/___", r) == [[4, 4], [1], []]
    # Trailing blank lines and carriage returns (a Windows shell, as in the seed) are fine.
    assert read_board("41_\r\n4__\r\n___\r\n", r) == [[4, 4], [1], []]


def test_solve_takes_the_seed_boards_and_gives_the_same_answer() -> None:
    # The seed's call asks for die 5 on two empty boards.
    seed = solve(SEED_EMPTY, SEED_EMPTY_ESCAPED, 5, depth=2)
    ours = solve("___/___/___", "_/_/_", 5, depth=2)
    assert seed == ours
    a = solve("41_\n4__\n___", r"2__\n___\n___", 4, depth=2)
    b = solve("44_/1__/___", "2__/___/___", 4, depth=2)
    assert a == b


def test_tree_takes_the_seed_boards() -> None:
    assert search_tree("41_\n4__\n___", "2__\n___\n___", 4, 1) == search_tree(
        "44/1/_", "2/_/_", 4, 1
    )


@pytest.mark.parametrize(
    ("board", "needle"),
    [
        ("___", "neither board format"),
        ("4_/_\n__", "neither board format"),
        ("41_\n4__", "expected 3 rows of 3 squares, got 2 rows"),
        ("41__\n4__\n___", "expected 3 rows of 3 squares"),
        ("7__\n___\n___", "'7' in row 1 is not a die face 1..6"),
        ("44/1", "expected 3 columns"),
    ],
)
def test_bad_boards_name_both_formats(board: str, needle: str) -> None:
    with pytest.raises(UsageError) as info:
        read_board(board, KnuckleRules())
    message = str(info.value)
    assert needle in message and "\n" not in message
    assert "44_/1__/___" in message and "41_\\n4__\\n___" in message


def test_cli_reads_both_formats_and_rejects_others_with_exit_2(cli) -> None:
    seed = cli(["knucklebones", "solve", SEED_EMPTY, SEED_EMPTY_ESCAPED, "5", "--depth", "1"])
    ours = cli(["knucklebones", "solve", "___/___/___", "___/___/___", "5", "--depth", "1"])
    assert seed.code == ours.code == 0, seed.stderr
    assert seed.stdout == ours.stdout
    tree = cli(["knucklebones", "tree", "41_\n4__\n___", "2__\n___\n___", "4", "--depth", "1"])
    assert tree.code == 0 and "we play column 3" in tree.stdout
    for board in ("444", "___\n___", "4_/_\n__/_"):
        bad = cli(["knucklebones", "solve", board, SEED_EMPTY, "5"])
        assert bad.code == 2, board
        assert len(bad.stderr.strip().splitlines()) == 1
        assert "44_/1__/___" in bad.stderr and "41_\\n4__\\n___" in bad.stderr
