"""The search's "exact" flag, checked against an independent brute force, and exact lookups.

README ("The full game, by search"): a column's value is exact only when every line searched
ends the game. Every line means every roll and every move considered at every node, not only
the moves the search chose. On a board solved in the tables (knucklebones-2x2 here) the search
given the tables' values looks positions up, and `solve` answers from the tables (the one
answer, :mod:`pipeline.answer.boards`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.apps.knucklebones.position import solve
from pipeline.games.knucklebones.columns import BoardRules
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players.search import Searcher
from pipeline.store.footers import file_rules
from tests.conftest import invoke

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
    board = BoardRules(game)  # the one answer's search (its columns in the user's order)
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
        for column, ev in board.searched(board.position_of(pairs), die, depth):
            after_mine, after_theirs = place(mine, theirs, column - 1, die)
            exact = not a_line_continues(after_theirs, after_mine, depth - 1, rules)
            assert ev.exact == exact, (mine, theirs, die, depth, column)
            counts[exact] += 1
    # Both answers occur often enough for the comparison to mean something.
    assert counts[True] > 150 and counts[False] > 150, counts


# -- exact values looked up in the tables of a solved board ------------------------------------


@pytest.fixture(scope="module")
def built_2x2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding both objectives of the 2x2 board, built by the CLI."""
    data = tmp_path_factory.mktemp("kb2x2")
    result = invoke(["build", "--variant", "knucklebones-2x2,knucklebones-2x2-score", "-d", data])
    assert result.code == 0, result.stderr
    return data


def _known(data: Path, game: Knucklebones) -> np.ndarray:
    """[states, 2]: each state's (P(win), E[difference]) from the states table."""
    states = pl.read_parquet(data / "states.parquet")
    out = np.full((game.n_states, 2), np.nan)
    for k, name in enumerate(("knucklebones-2x2", "knucklebones-2x2-score")):
        rows = states.filter(variant=name)
        out[rows["state_id"].to_numpy(), k] = rows["value"].to_numpy()
    assert not np.isnan(out).any()
    return out


def test_search_with_lookup_gives_the_tables_values_flagged_exact(built_2x2: Path) -> None:
    game = Knucklebones(KnuckleRules(2, 2))
    known = _known(built_2x2, game)
    searcher = Searcher(game, known=known)
    moves = pl.read_parquet(built_2x2 / "moves.parquet")
    wins = moves.filter(variant="knucklebones-2x2")
    score = moves.filter(variant="knucklebones-2x2-score")
    live = np.flatnonzero(~game.terminal_mask(game.positions))
    for s in np.random.default_rng(3).choice(live, 150, replace=False):
        pairs = game.positions[s].astype(np.int64)
        roll = int(s % 6) + 1
        got = searcher.move_values(pairs, roll, depth=3)
        assert all(ev.exact for _, ev in got)
        # A move that ends the game is exact without the tables; every other one used them.
        assert any(ev.from_tables for _, ev in got) or all(
            game.terminal_mask(game.t.swap[_after(game, pairs, j, roll)][None, :])[0]
            for j, _ in got
        )
        for table, field in ((wins, "win"), (score, "diff")):
            want = table.filter(state_id=int(s), roll=roll)["value"].sort().to_list()
            assert sorted(getattr(ev, field) for _, ev in got) == pytest.approx(want, abs=1e-9)
        # The root chance node is the state's own value.
        ev = searcher.evaluate(pairs, 2)
        assert ev.from_tables and ev.win == known[s, 0] and ev.diff == known[s, 1]


def _after(game: Knucklebones, pairs: np.ndarray, j: int, roll: int) -> np.ndarray:
    """Sorted ``pairs`` after the die goes into column ``j`` (mover's view)."""
    out = np.sort(pairs)
    out[j] = game.t.place[out[j], roll - 1]
    return out


def test_tables_are_found_by_their_board_only(built_2x2: Path) -> None:
    """Another board, or a directory without tables: searched, no tables named (a 3x2 position
    past its packaged opening book, which would answer it exactly)."""
    other = solve("41/2_/__", "5_/66/__", 3, 1, "knucklebones-3x2", built_2x2)
    assert not other.exact and other.tables == () and other.depth == 1
    nowhere = solve("4_/__", "1_/__", 3, 1, "knucklebones-2x2", built_2x2.parent / "nowhere")
    assert not nowhere.exact and nowhere.tables == ()


def test_lookup_reads_boards_stored_on_their_own(built_2x2: Path, tmp_path: Path) -> None:
    """The big boards live in data/variants/<name>/states.parquet, found by the rules they
    record (here under other names): the answer is the shared file's, column for column."""
    import json

    import pyarrow.parquet as pq

    rules = file_rules(built_2x2 / "states.parquet")
    names = ("knucklebones-2x2", "knucklebones-2x2-score")
    for name in names:
        own = tmp_path / "variants" / f"my-{name}" / "states.parquet"
        own.parent.mkdir(parents=True)
        rows = pl.read_parquet(built_2x2 / "states.parquet").filter(variant=name)
        rows = rows.with_columns(variant=pl.lit(f"my-{name}")).to_arrow()
        meta = {b"stb.rules": json.dumps({f"my-{name}": rules[name]}).encode()}
        pq.write_table(rows.replace_schema_metadata(meta), own)
    found = solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", tmp_path)
    shared = solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", built_2x2)
    assert found.tables == tuple(f"my-{n}" for n in names) and shared.tables == names
    assert found.exact and found.columns == shared.columns and found.value == shared.value


def test_cli_solve_says_exact_from_tables(built_2x2: Path) -> None:
    args = ["knucklebones", "solve", "4_/__", "1_/__", "3", "-v", "knucklebones-2x2"]
    looked = invoke([*args, "-d", built_2x2])
    assert looked.code == 0, looked.stderr
    assert "exact (from tables)" in looked.stdout and "knucklebones-2x2-score" in looked.stdout
    a = solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", built_2x2)
    assert a.exact and a.tables == ("knucklebones-2x2", "knucklebones-2x2-score")
    assert all(cv.win is not None and cv.diff is not None for cv in a.columns)
    searched = invoke([*args, "-d", built_2x2, "--no-tables"])
    assert searched.code == 0 and "from tables" not in searched.stdout
    bad = invoke(["knucklebones", "solve", "4/_/_", "_/_/_", "3", "-v", "classic"])
    assert bad.code == 2 and "not a Knucklebones board" in bad.stderr
