"""The N-player family: exact values against an independent solver, the two-player course game
as its N = 2 case, cananian's stake game, and the checks on a position."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from pipeline.errors import UsageError
from pipeline.games.nplayer.game import NPlayer
from pipeline.games.nplayer.rules import FIRST_SEAT, NPlayerRules
from pipeline.games.registry import get_variant
from pipeline.solve.rank_order import solve_rank_order
from tests.support.nplayer_reference import reference_solver
from tests.support.two_player_reference import reference_solver as two_player_reference

SMALL = [
    # (rules, reference options)
    (NPlayerRules.make(players=3, tiles=4, sides=3, one_die_sum=3), {"one_die_sum": 3, "sides": 3}),
    (NPlayerRules.make(players=3, tiles=5, sides=2, one_die_sum=0), {"sides": 2}),
    (
        NPlayerRules.make(players=4, tiles=4, dice=1, sides=4, one_die_sum=0),
        {"dice": 1, "sides": 4},
    ),
    (
        NPlayerRules.make(
            players=2, tiles=4, sides=3, one_die_sum=3, scoring="digital", payoff="stake"
        ),
        {"sides": 3, "one_die_sum": 3, "digital": True, "payoff": "stake"},
    ),
    (
        NPlayerRules.make(
            players=3, tiles=4, sides=3, one_die_sum=2, payoff="stake", shut_multiplier=3
        ),
        {"sides": 3, "one_die_sum": 2, "payoff": "stake", "multiplier": 3},
    ),
]


def earlier_scores(game: NPlayer, seat: int, best: int, count: int) -> tuple[int, ...]:
    """Scores of the players before ``seat``: the first ``count`` hold ``best``, the others
    are beaten (by one more than the largest possible score)."""
    worse = int(game.possible_scores.max()) + 1
    return tuple([best] * count + [worse] * (seat - 1 - count))


@pytest.mark.parametrize(("rules", "options"), SMALL, ids=lambda x: getattr(x, "slug", str)())
def test_every_share_equals_the_exact_reference(rules: NPlayerRules, options: dict) -> None:
    """Every player's payoff in every state, and the graph's value, equal the independent
    exact-fraction solver's within 1e-12."""
    game = NPlayer(rules)
    g = game.graph()
    sol = solve_rank_order(g)
    play = reference_solver(rules.players, rules.box.tiles, **options)
    mask, seat, best, count = game.position(g.state_id)
    vectors = game.shares_of(g.state_id)
    checked = 0
    for i in range(g.n_states):
        k, b, c = int(seat[i]), int(best[i]), int(count[i])
        if k > 1 and rules.payoff == "share" and k == rules.players and best[i] == 0:
            continue
        scores = earlier_scores(game, k, b, c)
        want = [float(x) for x in play(k, int(mask[i]), scores)]
        assert sol.value[i] == pytest.approx(want[k - 1], abs=1e-12)
        for j in range(k, rules.players + 1):
            assert vectors[i, FIRST_SEAT + j - 1] == pytest.approx(want[j - 1], abs=1e-12)
        if k > 1:
            assert vectors[i, 0] == pytest.approx(want[0], abs=1e-12)  # a holder: seat 1
        if k - 1 > c:
            assert vectors[i, 1] == pytest.approx(want[k - 2], abs=1e-12)  # beaten: seat k-1
        checked += 1
    assert checked > 100


def test_two_players_are_the_course_game_state_for_state() -> None:
    """N = 2 under the course's rules: the ids of the old two-player tables (P1: the mask; P2:
    P1's score * 2**9 + mask) and values within 1e-15 of the course game's own solver."""
    game = NPlayer(NPlayerRules.make())
    g = game.graph()
    sol = solve_rank_order(g)
    p1, p2 = two_player_reference()
    mask, score = game.split_ids(g.state_id)
    assert g.n_states == 512 * 44
    assert sorted(set(score.tolist())) == list(range(44))
    worst = 0.0
    for i in range(g.n_states):
        m, s = int(mask[i]), int(score[i])
        want = p1(m) if s == 0 else p2(m, s)
        worst = max(worst, abs(float(want) - sol.value[i]))
    assert worst <= 1e-15
    assert sol.value[np.searchsorted(g.state_id, 511)] == pytest.approx(0.502810, abs=5e-7)


#: sha256 of the two-player variant's float64 values in state-id order, as the separate
#: two-player solver made them before it became the N = 2 case (commit 015f08e).
TWO_PLAYER_VALUES_SHA256 = "6acf72d310588227f3aecabfc215a2e605157a59d8e8648ac4f289db9dc3be99"


def test_two_players_bit_for_bit_as_before() -> None:
    """The N = 2 case gives today's two-player values bit for bit (same graph, same solve)."""
    import hashlib

    g = get_variant("two-player").make().graph()
    values = solve_rank_order(g).value
    assert hashlib.sha256(values.tobytes()).hexdigest() == TWO_PLAYER_VALUES_SHA256


# cananian's two-player analysis (cananian.livejournal.com, "Shut the Box" for two players for a
# stake): an optimal first player loses about 2.5 % of the stake; P1 shuts about 9.5 % of games,
# P2 about 8.2 %, P1 wins on points about 37.3 %, P2 about 43.8 %, ties about 0.9 %.
CANANIAN = {"p1_value": -0.025, "shut": [0.095, 0.082], "points": [0.373, 0.438], "tie": 0.009}


def test_stake_game_against_cananians_figures() -> None:
    """The loss and the shut and tie rates agree with the published rounded figures; the wins on
    points differ by under a point (see docs/variants.md: the published split adds up to 99.7 %,
    ours exactly to 1)."""
    game = get_variant("two-player-stake").make()
    found = game.outcomes()
    assert found["payoff"][0] == pytest.approx(CANANIAN["p1_value"], abs=0.001)
    assert found["payoff"][0] + found["payoff"][1] == pytest.approx(0, abs=1e-15)
    for ours, theirs in zip(found["shut"], CANANIAN["shut"], strict=True):
        assert ours == pytest.approx(theirs, abs=0.0005)
    for ours, theirs in zip(found["points"], CANANIAN["points"], strict=True):
        assert ours == pytest.approx(theirs, abs=0.01)
    assert found["tie"][0] == pytest.approx(CANANIAN["tie"], abs=0.0015)
    total = sum(found["shut"]) + sum(found["points"]) + found["tie"][0]
    assert total == pytest.approx(1, abs=1e-12)


@pytest.mark.parametrize("players", [3, 4])
def test_outcomes_and_payoffs_add_up(players: int) -> None:
    """Every game ends in exactly one way; the seats' shares of the win sum to 1, and playing
    for P(shut) never beats playing for the share."""
    game = NPlayer(NPlayerRules.make(players=players, tiles=6, sides=3, one_die_sum=4))
    found = game.outcomes()
    assert sum(found["shut"]) + sum(found["points"]) + found["tie"][0] == pytest.approx(
        1, abs=1e-12
    )
    assert sum(found["payoff"]) == pytest.approx(1, abs=1e-12)
    for seat in range(1, players + 1):
        chased = game.outcomes(chaser=seat)
        assert chased["payoff"][seat - 1] <= found["payoff"][seat - 1] + 1e-12
        assert chased["shut"][seat - 1] >= found["shut"][seat - 1] - 1e-12


def test_named_variants() -> None:
    """The named variants: the course's rules for two, three and four players, three always
    rolling two dice, cananian's stake game."""
    assert get_variant("two-player").make().rules()["players"] == 2
    three = get_variant("three-player").make()
    assert three.r.players == 3 and three.r.box.one_die_sum == 6 and three.r.box.one_die == "forced"
    assert get_variant("four-player").make().r.players == 4
    two_dice = get_variant("three-player-two-dice").make()
    assert two_dice.r.box.one_die == "never" and two_dice.r.players == 3
    stake = get_variant("two-player-stake").make()
    assert (stake.r.payoff, stake.r.box.scoring, stake.r.shut_multiplier) == ("stake", "digital", 2)


def test_state_ids_round_trip() -> None:
    game = NPlayer(NPlayerRules.make(players=4, tiles=5, sides=3, one_die_sum=3))
    ids = np.array(
        [
            game.r.block_of(k, b, c) * 32 + m
            for k, b, c, m in product(
                [2, 3, 4], game.possible_scores.tolist()[:3], [1, 2, 3], [0, 5, 31]
            )
            if c < k
        ]
    )
    mask, seat, best, count = game.position(ids)
    again = [
        game.r.block_of(int(k), int(b), int(c)) * 32 + int(m)
        for m, k, b, c in zip(mask, seat, best, count, strict=True)
    ]
    assert again == ids.tolist()
    assert game.parse_state(
        "134", player=3, best_score=int(game.possible_scores[0]), best_count=2
    ) in set(game.graph().state_id.tolist())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"player": 0, "best_score": 11}, "player 0 is not a seat"),
        ({"player": 5, "best_score": 11}, "player 5 is not a seat"),
        ({"player": 3, "best_score": 46}, "cannot finish a turn with score 46"),
        ({"player": 3, "best_score": 0}, "must be positive"),
        ({"player": 3, "best_score": 11, "best_count": 3}, "cannot be shared by 3 players"),
        ({"player": 3, "best_score": 11, "best_count": 0}, "cannot be shared by 0 players"),
        ({"player": 3}, "needs the best score"),
        ({"player": 1, "best_score": 11}, "plays first"),
        ({"p1_score": 11}, "--p1-score is for two players"),
    ],
)
def test_impossible_positions_are_refused(extra: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        get_variant("four-player").make().parse_state("134", **extra)


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"players": 0}, "players must be between 2 and 6"),
        ({"players": 1}, "players must be between 2 and 6"),
        ({"players": 99}, "players must be between 2 and 6"),
        ({"payoff": "money"}, "payoff"),
        ({"shut_multiplier": 3}, "goes with the stake payoff"),
        ({"tiles": 13}, "between 1 and 12"),
        ({"scoring": "digital", "tiles": 10}, "digital scoring"),
    ],
)
def test_bad_rules(rules: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        NPlayerRules.make(**rules)


def test_the_rules_hold_the_one_player_rule_set() -> None:
    """The N-player rules are the one-player dice rules (a RuleSet, playing for the score) plus
    the players and payoff: the dice rules are checked by the RuleSet, with its messages; a
    one-die rule with nothing left in force is stored as ``never``, however it was given."""
    from pipeline.games.shutbox.rules import RuleSet

    course = NPlayerRules.make()
    assert course.box == RuleSet(one_die="forced", one_die_sum=6, objective="score")
    assert (course.players, course.payoff, course.shut_multiplier) == (2, "share", 2)
    for said in ({"one_die_sum": 0}, {"one_die_sum": None}, {"one_die": "never"}, {"dice": 1}):
        box = NPlayerRules.make(**said).box
        assert (box.one_die, box.one_die_sum, box.one_die_shut) == ("never", None, ())
    assert NPlayerRules.make(one_die_sum=0) == NPlayerRules.make(one_die="never")
    with pytest.raises(UsageError, match="dice must be between 1 and 8, not 9"):
        NPlayerRules.make(dice=9)  # the RuleSet's own check and words
    with pytest.raises(UsageError, match="one-die rule must be one of"):
        NPlayerRules.make(dice=1, one_die="sometimes")  # checked before "one die: never"
    with pytest.raises(UsageError, match="play for the score"):
        NPlayerRules(RuleSet(tiles=5), players=3)


@pytest.mark.parametrize(
    "name",
    ["two-player", "three-player", "four-player", "three-player-two-dice", "two-player-stake"],
)
def test_recorded_rules_read_back_to_the_same_rules(name: str) -> None:
    """What a build records (to_dict, in the manifest and the files' metadata) names the
    variant's rules again, and keeps the flat fields the tables have always recorded."""
    rules = get_variant(name).make().r
    recorded = rules.to_dict()
    assert NPlayerRules.from_dict(recorded) == rules
    assert list(recorded) == [
        "game", "players", "tiles", "dice", "sides", "one_die", "one_die_sum", "one_die_shut",
        "max_per_move", "scoring", "payoff", "shut_multiplier",
    ]  # fmt: skip
    if name != "three-player-two-dice":  # the course's dice rules, as recorded before
        assert (recorded["one_die"], recorded["one_die_sum"]) == ("forced", 6)
