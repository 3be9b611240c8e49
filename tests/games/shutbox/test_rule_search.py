"""The rule family's search against an independent brute force (issue 32, item 6): on small
boxes every rule of the family is played out by a plain recursion over tile sets, with the keys
computed from the tiles and the dice rolled, and priced for P(shut) and the expected score."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from pipeline.errors import UsageError
from pipeline.games.shutbox import rule_family, rule_keys, rule_search
from pipeline.games.shutbox.game import RuleSet, ShutTheBox
from pipeline.games.shutbox.rule_family import Rule
from pipeline.solve.rank_order import solve_rank_order

Tiles = frozenset[int]
Move = frozenset[int]

#: The small boxes searched by brute force: six tiles and one die (The Fiddler's box); five
#: tiles, two three-sided dice and one die by choice once the open tiles sum to 4 or less (every
#: one-die threshold); four tiles scored digitally (the score key splits moves there).
BOXES = {
    "six-tiles-one-die": RuleSet(tiles=6, dice=1),
    "optional-one-die": RuleSet(tiles=5, dice=2, sides=3, one_die="optional", one_die_sum=4),
    "digital": RuleSet(tiles=4, dice=2, sides=2, objective="score", scoring="digital"),
}


def rolls(dice: int, sides: int) -> dict[int, Fraction]:
    """The totals of ``dice`` dice of ``sides`` sides and their probabilities."""
    found: dict[int, Fraction] = {}
    for faces in itertools.product(range(1, sides + 1), repeat=dice):
        found[sum(faces)] = found.get(sum(faces), Fraction(0)) + Fraction(1, sides**dice)
    return found


def legal(tiles: Tiles, roll: int) -> list[Move]:
    """Every set of open tiles adding up to the roll."""
    return [
        frozenset(c)
        for k in range(1, len(tiles) + 1)
        for c in itertools.combinations(sorted(tiles), k)
        if sum(c) == roll
    ]


class Brute:
    """One box's rules, written again from the rule set: dice, moves, scores and keys."""

    def __init__(self, rules: RuleSet) -> None:
        self.r = rules

    def score(self, tiles: Tiles) -> int:
        if self.r.scoring == "digital":
            return int("".join(str(t) for t in sorted(tiles)) or "0")
        return sum(tiles)

    def may_roll_one(self, tiles: Tiles) -> bool:
        """Whether the rules offer one die here (only the optional rule is tested)."""
        return self.r.one_die == "optional" and sum(tiles) <= (self.r.one_die_sum or 0)

    def dice(self, tiles: Tiles, threshold: int | None) -> int:
        """The dice a rule with ``threshold`` rolls with ``tiles`` open."""
        if threshold is not None and self.may_roll_one(tiles) and sum(tiles) <= threshold:
            return 1
        return self.r.dice

    def keys(self, tiles: Tiles, move: Move, threshold: int | None) -> dict[str, object]:
        """Every key of a move, from its tiles (a shut box beats everything on look-ahead)."""
        left = tiles - move
        if left:
            after = rolls(self.dice(left, threshold), self.r.sides)
            playable = [t for t in after if legal(left, t)]
            totals: object = len(playable)
            chance: object = sum((after[t] for t in playable), Fraction(0))
        else:
            totals = chance = math.inf
        return {
            "high": max(move),
            "count": len(move),
            "low": min(move),
            "top": max(left, default=0),
            "score": self.score(left),
            "totals": totals,
            "chance": chance,
            "small": int(any(t in left for t in (1, 2, 3))),
            "smalls": sum(1 for t in (1, 2, 3) if t in left),
        }

    @cache  # noqa: B019  (a few boxes per test run)
    def choices(self, threshold: int | None) -> list[tuple[Tiles, int, list[Move], list[dict]]]:
        """Every (tiles, roll) with two or more moves, its moves and each move's keys, for a
        rule with ``threshold`` (the keys look ahead at the dice it rolls next)."""
        out = []
        for k in range(1, self.r.tiles + 1):
            for tiles in map(frozenset, itertools.combinations(range(1, self.r.tiles + 1), k)):
                for total in rolls(self.dice(tiles, threshold), self.r.sides):
                    moves = legal(tiles, total)
                    if len(moves) > 1:
                        keys = [self.keys(tiles, m, threshold) for m in moves]
                        out.append((tiles, total, moves, keys))
        return out

    def picks(self, rule: Rule) -> tuple[int, ...]:
        """The rule's move at every (tiles, roll) with a choice: its keys in order, larger or
        smaller first, then the highest tile where moves differ."""
        out = []
        for _, _, moves, keys in self.choices(rule.one_die_at_most):

            def rank(i: int, moves: list[Move] = moves, keys: list[dict] = keys) -> tuple:
                signed = tuple(sign * keys[i][name] for name, sign in rule.keys)
                return (*signed, sum(1 << (t - 1) for t in moves[i]))

            out.append(max(range(len(moves)), key=rank))
        return tuple(out)

    @cache  # noqa: B019
    def values(self, threshold: int | None, picks: tuple[int, ...]) -> dict[str, float]:
        """P(shut) and the expected final score of the play ``picks``, from every tile open."""
        chosen = {
            (tiles, total): moves[i]
            for (tiles, total, moves, _), i in zip(self.choices(threshold), picks, strict=True)
        }

        @cache
        def value(tiles: Tiles) -> tuple[float, float]:
            if not tiles:
                return 1.0, 0.0
            shut = score = 0.0
            for total, p in rolls(self.dice(tiles, threshold), self.r.sides).items():
                moves = legal(tiles, total)
                if not moves:
                    score += float(p) * self.score(tiles)
                    continue
                nxt = value(tiles - chosen.get((tiles, total), moves[0]))
                shut, score = shut + float(p) * nxt[0], score + float(p) * nxt[1]
            return shut, score

        shut, score = value(frozenset(range(1, self.r.tiles + 1)))
        return {"shut": shut, "score": score}


def searched(rules: RuleSet) -> rule_search.Searched:
    game = ShutTheBox(rules)
    g = game.graph()
    start = int(np.flatnonzero(g.state_id == game.start_state())[0])
    view = rule_keys.box_rules(game, g)
    return rule_search.search(view, rule_search.objectives(game, g, solve_rank_order(g), start))


@pytest.mark.parametrize("name", list(BOXES))
def test_every_rule_of_the_family_agrees_with_the_brute_force(name: str) -> None:
    rules = BOXES[name]
    found = searched(rules)
    brute = Brute(rules)
    # the family's size, counted independently: 9 keys, each in two directions, 1 to 3 of them
    per_threshold = sum(2**k * math.perm(9, k) for k in (1, 2, 3))
    assert (
        found.n_rules
        == per_threshold * max(1, len(found.thresholds))
        == 4338 * len(found.thresholds)
    )
    if rules.one_die == "optional":
        assert found.thresholds == [0, 1, 2, 3, 4]  # never, then each open sum with a choice
    expected: dict[str, list[float]] = {o: [] for o in found.values}
    for r in range(found.n_rules):
        rule = found.rule(r)
        values = brute.values(rule.one_die_at_most, brute.picks(rule))
        for objective in expected:
            expected[objective].append(values[objective])
    for objective, values in expected.items():
        ours = found.values[objective][found.policy]
        assert np.allclose(ours, values, rtol=0, atol=1e-12), objective
        # the best rule of each size is the brute force's best among the rules of that size
        better: Callable[[float], float] = (lambda v: v) if objective == "shut" else (lambda v: -v)
        for size in (1, 2, 3):
            mine = [r for r in range(found.n_rules) if found.rule(r).size <= size]
            top = max(better(values[r]) for r in mine)
            rule, best = found.best_within(objective, size)
            assert abs(better(best) - top) <= 1e-12
            assert rule.size <= size


def test_the_searched_objectives_and_their_optima() -> None:
    """A box is searched for its own objective and the other of P(shut) and the score: the
    score graph of the classic rules is classic-score's (11.1575... from the full box)."""
    classic = searched(RuleSet())
    assert list(classic.objectives) == ["shut", "score"]
    assert classic.objectives["shut"].optimum == pytest.approx(0.07143162230560596, abs=1e-15)
    score_box = ShutTheBox(RuleSet(objective="score"))
    g = score_box.graph()
    alone = solve_rank_order(g).value[np.flatnonzero(g.state_id == 511)[0]]
    assert abs(classic.objectives["score"].optimum - alone) <= 1e-12
    # a box that can never be shut is searched for its score only
    never = searched(RuleSet(tiles=8, dice=1, objective="score"))
    assert list(never.objectives) == ["score"]


def test_the_objective_graph_of_a_box_own_objective_is_its_graph() -> None:
    for rules in (RuleSet(), RuleSet(objective="score", scoring="digital", one_die="forced",
                                     one_die_sum=6)):  # fmt: skip
        game = ShutTheBox(rules)
        g = game.graph()
        own = rule_search.objective_graph(game, g, rules.objective)
        assert np.array_equal(own.mv_offset, g.mv_offset)
        assert np.array_equal(own.terminal, g.terminal, equal_nan=True)
        assert own.maximise == g.maximise


def test_named_rules_play_as_the_named_strategies() -> None:
    """The named strategies that are rules of the family make the same policy as
    strategies.py (the benchmark's exact values)."""
    from pipeline.games.shutbox import strategies
    from pipeline.solve import policy_eval

    game = ShutTheBox(RuleSet())
    g = game.graph()
    sol = solve_rank_order(g)
    view = rule_keys.box_rules(game, g)
    features = strategies.move_features(g, strategies.tile_view(game, g), sol.choice)
    for name, spec in rule_family.NAMED_RULES.items():
        theirs = strategies.policy_for(strategies.get_strategy(name), g, sol, features)
        rows = view.rule_rows(rule_family.parse_spec(spec))
        mine = policy_eval.deterministic(g, rows, sol.choice)
        assert np.array_equal(mine.move_prob, theirs.move_prob), name


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "names no key"),
        ("max-height", "is not a key"),
        ("up-high", "is not a key"),
        ("max-high,min-high", "twice"),
        ("max-high,max-count,max-low,max-top", "at most 3"),
        ("max-high,one-die-le0", "one-die threshold"),
        ("max-high,one-die-lex", "one-die threshold"),
        ("one-die-never", "names no key"),
    ],
)
def test_bad_specs_are_refused_with_what_is_allowed(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        rule_family.parse_spec(spec)


def test_specs_and_words() -> None:
    rule = Rule((("high", 1), ("count", -1)), 6)
    assert rule.spec == "max-high,min-count,one-die-le6"
    assert rule_family.parse_spec(rule.spec) == rule
    assert rule_family.parse_spec("min-count,one-die-never") == Rule((("count", -1),), 0)
    assert rule.text == (
        "Shut the highest tile you can; then shut as few tiles as you can; roll one die once "
        "the open tiles sum to 6 or less"
    )
    orders = list(rule_family.orders())
    assert len(orders) == len(set(orders)) == 4338
    assert orders[0] == (("high", 1),) and orders[1] == (("high", -1),)
