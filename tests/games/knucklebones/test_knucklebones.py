"""Knucklebones rules, canonical positions, enumeration counts and the value-iteration solves.

Rules and counts: seed 004_4436d6a68a1265db.txt and the Cult of the Lamb facts in
seeds/README.md (84 columns, 3,067 facing pairs, 4,812,987,894 canonical positions), and the
small-board counts of issue 6.
"""

from __future__ import annotations

import itertools
from math import comb
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import (
    Knucklebones,
    KnuckleRules,
    PairTables,
    all_multisets,
    enumerate_columns,
    n_positions,
)
from pipeline.games.knucklebones.numbering import column_number, pair_numbers, parse_board
from pipeline.solve.rank_order import best_moves
from pipeline.solve.value_iteration import solve_value_iteration
from tests.support.graphs import check_graph


def game(columns: int, rows: int, faces: int = 6, objective: str = "wins") -> Knucklebones:
    return Knucklebones(KnuckleRules(columns, rows, faces, objective))


def board(text: str, g: Knucklebones) -> list[list[int]]:
    return parse_board(text, g.r)


# -- rules -------------------------------------------------------------------------------------


def test_score_of_4_1_4_is_17() -> None:
    # seeds/README.md: v appearing c times in a column scores v * c * c: 4*2*2 + 1 = 17.
    t = PairTables(3, 6)
    assert t.col_score[column_number([4, 1, 4], 3, 6)] == 17
    assert t.col_score[column_number([5, 5, 5], 3, 6)] == 45
    assert t.col_score[column_number([], 3, 6)] == 0


def test_placing_removes_equal_values_in_the_facing_column_only() -> None:
    t = PairTables(3, 6)
    p = pair_numbers(3, 6)[column_number([2], 3, 6), column_number([4, 4, 1], 3, 6)]
    after = t.place[p, 4 - 1]
    assert t.column_text(t.pair_mover[after]) == "24"
    assert t.column_text(t.pair_opp[after]) == "1"
    # A full column takes no die.
    full = pair_numbers(3, 6)[column_number([2, 2, 3], 3, 6), column_number([], 3, 6)]
    assert (t.place[full] == -1).all()


def test_the_game_ends_when_a_board_fills_and_scores_after_removals() -> None:
    g = game(3, 3)
    # Mover has 8 dice and fills the last slot with a 6, removing the opponent's two 6s.
    mine = board("11_/222/333", g)
    theirs = board("66_/4_/5", g)
    pairs = g.pairs_of_boards(mine, theirs)
    seen_by_opponent = g.play(pairs, 0, 6)[None, :]
    assert g.terminal_mask(seen_by_opponent)[0]
    opp_total, mover_total = g.scores(seen_by_opponent)
    assert mover_total[0] == 4 + 6 + 2 * 9 + 3 * 9  # 1-1-6, 2-2-2, 3-3-3
    assert opp_total[0] == 4 + 5  # the 6s are gone
    # The opponent (now to move) has lost: value 0 for them, so 1 for the mover.
    assert g.final_values(seen_by_opponent)[0] == 0.0
    assert not g.terminal_mask(pairs[None, :])[0]


def test_a_move_places_removes_and_turns_the_board() -> None:
    """The one move (issue 30): the die joins the mover's column, the opponent's equal dice in
    the facing column go, and the position is then seen by the opponent, columns in order."""
    g = game(3, 3)
    pairs = g.pairs_of_boards(board("44_/1__/___", g), board("2__/44_/___", g))
    after = g.play(pairs, 1, 4)
    assert g.board_text(after) == "2/_/_;44/14/_"  # the opponent's board first: they move next
    assert [c for c, _ in g.successors(pairs, 4)] == [0, 1, 2]
    full = g.pairs_of_boards(board("444/1__/___", g), board("_/_/_", g))
    assert g.legal_columns(full).tolist() == [1, 2]
    assert [c for c, _ in g.successors(full, 2)] == [1, 2]
    with pytest.raises(ValueError, match="column 1 is full"):
        g.play(full, 0, 2)
    assert g.state_of(after) == int(g.canonical(after[None, :])[0])
    assert not g.finished(after)


def test_the_move_is_the_compiled_rules_move_on_every_state() -> None:
    """Knucklebones.play (boards in play, column order kept) and the compiled rules of the
    solvers and the search (rules.move_pair, rules.turned_after: sorted positions) make the same
    successor of every state, die and column of a small board; the move of many positions at
    once is the move of each."""
    from pipeline.games.knucklebones.exact import cpu as exact

    g = game(2, 2, faces=3)
    pos = g.positions
    live = np.flatnonzero(~g.terminal_mask(pos))
    succ = exact.successor_ids(g.r, live.astype(np.int64))
    c, f = g.r.columns, g.r.faces
    checked = 0
    for row, i in enumerate(live.tolist()):
        pairs = pos[i].astype(np.int64)
        for die in range(1, f + 1):
            for col, after in g.successors(pairs, die):
                first = int(np.flatnonzero(pairs == pairs[col])[0])  # equal pairs: one move
                assert g.state_of(after) == succ[row, (die - 1) * c + first]
                checked += 1
    assert checked > 1000
    for die in range(1, f + 1):
        open_first = live[g.t.mover_size[pos[live, 0]] < g.r.rows]
        many = g.play(pos[open_first], 0, die)
        one = np.array([g.play(pos[i], 0, die) for i in open_first])
        assert (many == one).all() and many.dtype == pos.dtype


def test_parse_board_accepts_slots_and_rejects_bad_boards() -> None:
    r = KnuckleRules()
    assert parse_board("44_/1__/___", r) == parse_board("44/1/_", r) == [[4, 4], [1], []]
    for bad in ("44/1", "1234/_/_", "7/_/_", "a/_/_"):
        with pytest.raises(UsageError):
            parse_board(bad, r)
    g = game(3, 3)
    with pytest.raises(UsageError, match="both boards"):
        g.pairs_of_boards(board("4/_/_", g), board("4/_/_", g))


# -- canonical states and counts ----------------------------------------------------------------


def test_full_game_counts_columns_pairs_and_positions() -> None:
    # seeds/README.md (Cult of the Lamb facts): 84 columns, 3,067 facing pairs, 4,812,987,894.
    t = PairTables(3, 6)
    assert t.col_counts.shape[0] == 84
    assert t.n_pairs == 3067
    assert n_positions(t.n_pairs, 3) == 4_812_987_894


def test_pairs_agree_with_brute_force() -> None:
    # Independent count: all pairs of multisets (as sorted tuples) with no common value.
    for rows, faces in ((3, 6), (2, 6), (3, 4)):
        cols = [
            c
            for n in range(rows + 1)
            for c in itertools.combinations_with_replacement(range(1, faces + 1), n)
        ]
        assert len(cols) == enumerate_columns(rows, faces).shape[0] == comb(faces + rows, rows)
        pairs = sum(1 for a in cols for b in cols if not set(a) & set(b))
        assert pairs == PairTables(rows, faces).n_pairs


@pytest.mark.parametrize(
    ("columns", "rows", "faces", "expected"),
    [(2, 2, 6, 127_765), (2, 3, 6, 4_704_778), (3, 2, 6, 21_592_285), (3, 3, 4, 17_525_596)],
)
def test_small_board_counts(columns: int, rows: int, faces: int, expected: int) -> None:
    # Issue 6's counts of canonical positions for the small boards.
    assert game(columns, rows, faces).n_states == expected


def test_state_ids_are_dense_ranks_of_every_multiset() -> None:
    g = game(2, 2)
    pos = g.positions
    assert pos.shape == (127_765, 2)
    assert (np.diff(pos, axis=1) >= 0).all()
    assert (g.canonical(pos) == np.arange(pos.shape[0])).all()
    small = all_multisets(5, 3)
    assert small.shape[0] == comb(7, 3) == len({tuple(r) for r in small})


def test_column_order_and_dice_order_do_not_matter() -> None:
    g = game(3, 3)
    rng = np.random.default_rng(6)
    for _ in range(200):
        pairs = rng.integers(0, g.t.n_pairs, size=3)
        ids = {
            int(g.canonical(np.array(perm)[None, :])[0]) for perm in itertools.permutations(pairs)
        }
        assert len(ids) == 1
    a = g.numbering.state_of_boards(board("41_/2/66", g), board("_/35/1", g))
    b = g.numbering.state_of_boards(board("66/14/2", g), board("1/_/53", g))
    assert a == b


# -- the graph and its solution ----------------------------------------------------------------


def test_one_slot_board_solved_by_hand() -> None:
    # 1 column of 1 slot, die 1..2: the first die fills the mover's board and ends the game.
    # The mover always wins (their die beats an empty board): P(win) = 1, E[diff] = 1.5.
    for objective, start in (("wins", 1.0), ("score", 1.5)):
        g = game(1, 1, 2, objective)
        gr = g.graph()
        check_graph(gr)
        sol = solve_value_iteration(gr)
        assert sol.value[g.start_state()] == pytest.approx(start, abs=1e-12)
    # Opponent holds a 1, so their one-slot board is full: the game is over, lost 0 - 1.
    g = game(1, 1, 2, "score")
    s = g.numbering.state_of_boards([[]], [[1]])
    assert solve_value_iteration(g.graph()).value[s] == -1.0
    # 1 column of 2 slots, die 1..2, mover empty facing the opponent's [1]. Rolling 1 removes
    # the 1 and hands the opponent exactly this position (a cycle of length one); rolling 2
    # hands them [1] facing [2]. So v = (1 - v) / 2 + (1 - w) / 2 must hold.
    g = game(1, 2, 2, "wins")
    gr = g.graph()
    v = solve_value_iteration(gr).value
    here = g.numbering.state_of_boards([[]], [[1]])
    w = v[g.numbering.state_of_boards([[1]], [[2]])]
    assert v[here] == pytest.approx(0.5 * (1 - v[here]) + 0.5 * (1 - w), abs=1e-12)
    assert 0 < v[here] < 1


def _policy_values_by_linear_solve(gr, best: np.ndarray) -> np.ndarray:
    """V of the policy ``best`` (one move row per node), from (I - P) V = r with numpy."""
    n = gr.n_states
    a = np.eye(n)
    r = np.zeros(n)
    term = ~np.isnan(gr.terminal)
    r[term] = gr.terminal[term]
    prob = gr.ch_prob
    for row in range(gr.ch_state.shape[0]):
        s, m = gr.ch_state[row], best[gr.ch_node[row]]
        r[s] += prob[row] * gr.mv_offset[m]
        if gr.mv_dst[m] >= 0:
            a[s, gr.mv_dst[m]] -= prob[row] * gr.mv_scale[m]
    return np.linalg.solve(a, r)


@pytest.mark.parametrize("objective", ["wins", "score"])
@pytest.mark.parametrize(("columns", "rows", "faces"), [(2, 1, 3), (1, 2, 3), (2, 2, 2)])
def test_value_iteration_matches_a_linear_solve_of_its_policy(
    objective: str, columns: int, rows: int, faces: int
) -> None:
    g = game(columns, rows, faces, objective)
    gr = g.graph()
    check_graph(gr)
    sol = solve_value_iteration(gr)
    assert sol.residual <= 1e-12
    assert sol.iterations > 1
    best, _ = best_moves(gr, sol)
    exact = _policy_values_by_linear_solve(gr, best)
    assert np.max(np.abs(exact - sol.value)) < 1e-10
    # And no single deviation improves any node (Bellman optimality of the fixed point).
    succ = np.where(gr.mv_dst >= 0, exact[np.maximum(gr.mv_dst, 0)], 0.0)
    move_val = gr.mv_offset + gr.mv_scale * succ
    assert (
        move_val <= np.repeat(exact_node := sol.node_value, np.diff(gr.move_starts())) + 1e-10
    ).all()
    assert exact_node.shape[0] == gr.node_state.shape[0]


def test_graph_has_cycles() -> None:
    # A removal can undo a placement: 2x2, mover [1] faces opponent [-]; opponent rolls 1.
    g = game(2, 2)
    gr = g.graph()
    up = gr.rank[gr.mv_dst] > gr.rank[gr.node_state[gr.mv_node]] - 1
    assert up.any() and gr.cyclic


def test_2x2_build_through_the_stages(cli, tmp_path: Path) -> None:
    result = cli(["build", "--variant", "knucklebones-2x2,knucklebones-2x2-score", "-d", tmp_path])
    assert result.code == 0, result.stderr
    states = pl.read_parquet(tmp_path / "states.parquet")
    wins = states.filter(variant="knucklebones-2x2")
    assert wins.height == 127_765
    start = wins.filter(state_id=0).row(0, named=True)
    assert start["tiles"] == "_/_;_/_"
    assert 0.5 < start["value"] < 1.0
    score = states.filter(variant="knucklebones-2x2-score").filter(state_id=0)["value"][0]
    assert score > 0
    # Win probabilities are probabilities; terminal rows hold the final result.
    assert wins["value"].min() >= 0.0 and wins["value"].max() <= 1.0
    done = wins.filter("terminal")
    expect = (0.5 + 0.5 * np.sign(done["score"].to_numpy())).astype(float)
    assert np.array_equal(done["value"].to_numpy(), expect)
    policy = pl.read_parquet(tmp_path / "policy.parquet").filter(variant="knucklebones-2x2")
    assert policy.height == 6 * wins.filter(~pl.col("terminal")).height


def test_int32_graph_of_large_boards_solves_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    # Large boards get int32 index arrays; force that on 2x2 and compare with int64.
    import pipeline.games.knucklebones.game as kb

    wide = game(2, 2).graph()
    monkeypatch.setattr(kb, "BIG_GRAPH_MOVES", 0)
    narrow = game(2, 2).graph()
    assert narrow.mv_dst.dtype == np.int32 and wide.mv_dst.dtype == np.int64
    check_graph(narrow)
    a, b = solve_value_iteration(wide), solve_value_iteration(narrow)
    assert np.array_equal(a.value, b.value)
    assert np.array_equal(best_moves(wide, a)[0], best_moves(narrow, b)[0])


def test_full_game_is_not_built_as_a_graph(cli, tmp_path: Path) -> None:
    res = cli(["build", "--variant", "knucklebones", "-d", tmp_path])
    assert res.code == 2
    assert "4,812,987,894 positions" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.parquet"))
