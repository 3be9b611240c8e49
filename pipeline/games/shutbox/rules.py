"""The rules of one-player Shut the Box as data: a rule set, its checks, and the moves it allows.

Kept apart from the graph builder (game.py), so that the streamed solver and the graph builder
both use it without importing each other. The dice rule (:func:`dice_pattern`) and the final
value (:func:`final_score`, :func:`objective_value`) are each written once, in numba's subset
over the integer rule vector (:meth:`RuleSet.vector`): the answers call them as plain Python,
the kernels compiled (:mod:`pipeline.games.shutbox.kernels`, which also derives their array
forms).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pipeline.games.dice import DiceRules, choice_problem, range_problem, target_problems

MAX_TILES = 24
MAX_DICE = 8
MAX_SIDES = 20
OBJECTIVES = ("shut", "score", "target")
ONE_DIE_MODES = ("never", "forced", "optional")
SCORINGS = ("sum", "digital")

if TYPE_CHECKING:  # numpy is loaded where the moves are made, not to read a rule set's name
    import numpy as np

#: Slots of the integer rule vector (:meth:`RuleSet.vector`) the scalar rules below read.
R_TILES, R_MODE, R_SUM, R_NEED, R_OBJECTIVE, R_TARGET, R_SCORING = range(7)
#: Bits of a state's dice pattern: which numbers of dice it may roll (one die, the usual dice).
ONE, USUAL = 1, 2
#: The rule vector's codes of the one-die modes and the objectives.
MODES = {"never": 0, "forced": 1, "optional": 2}
OBJECTIVE_CODES = {"shut": 0, "score": 1, "target": 2}


@dataclass(frozen=True)
class RuleSet(DiceRules):
    """The rules of a one-player Shut the Box game.

    ``one_die`` says when a single die is rolled instead of ``dice`` dice: ``never``; ``forced``
    (must) or ``optional`` (may) when the condition holds. The condition is the conjunction of
    ``one_die_sum`` (open tiles sum to at most this) and ``one_die_shut`` (these tiles are all
    shut); with neither given, an optional single die is always allowed.
    The objective is ``shut`` (maximise P(all tiles shut)), ``score`` (minimise the expected final
    score) or ``target`` (maximise P(final score <= target)). The final score is the sum of the open
    tiles, or with ``scoring="digital"`` the open tiles read as a number (1, 3, 4 -> 134).
    """

    tiles: int = 9
    dice: int = 2
    sides: int = 6
    one_die: str = "never"
    one_die_sum: int | None = None
    one_die_shut: tuple[int, ...] = ()
    objective: str = "shut"
    target: int | None = None
    max_per_move: int | None = None
    scoring: str = "sum"

    def __post_init__(self) -> None:
        object.__setattr__(self, "one_die_shut", tuple(sorted(set(self.one_die_shut))))
        super().__post_init__()  # the checks see the tiles as stored

    def problems(self) -> list[str]:
        """Every reason this rule set is contradictory or out of range (empty when valid)."""
        out: list[str] = []
        out += range_problem("tiles", self.tiles, 1, MAX_TILES)
        out += self.dice_rule_problems(MAX_DICE, MAX_SIDES, ONE_DIE_MODES, OBJECTIVES)
        out += choice_problem("scoring", self.scoring, SCORINGS)
        if out:
            return out
        has_condition = self.one_die_sum is not None or bool(self.one_die_shut)
        if self.one_die == "never" and has_condition:
            out.append("a one-die condition was given but the one-die rule is 'never'")
        if self.one_die != "never" and self.dice == 1:
            out.append("a one-die rule needs more than one die")
        if self.one_die == "forced" and not has_condition:
            out.append("a forced single die with no condition is just --dice 1")
        if self.one_die_sum is not None and self.one_die_sum < 1:
            out.append(f"the one-die open-sum limit must be positive, not {self.one_die_sum}")
        bad = [t for t in self.one_die_shut if not 1 <= t <= self.tiles]
        if bad:
            out.append(f"one-die tiles {bad} are not in a box of tiles 1..{self.tiles}")
        if self.max_per_move is not None and self.max_per_move < 1:
            out.append(f"at most {self.max_per_move} tiles per move would allow no move")
        if self.scoring == "digital" and self.tiles > 9:
            out.append("digital scoring reads tiles as digits, so it needs at most 9 tiles")
        out += target_problems(self.objective, self.target, self.max_score())
        top_roll = self.dice * self.sides
        never = list(range(top_roll + 1, self.tiles + 1))  # no roll can shut these
        if never and self.objective == "shut":
            out.append(
                f"tile {self.tiles} can never be shut with {self.dice} dice of {self.sides} sides, "
                f"so P(shut) is 0; use objective 'score' or 'target'"
            )
        if never and self.objective == "target" and self.target is not None:
            least = self.score_of(never)  # the tiles that stay open whatever happens
            if self.target < least:
                which = f"tile {never[0]}" if len(never) == 1 else f"tiles {never[0]}..{never[-1]}"
                out.append(
                    f"{which} can never be shut with {self.dice} dice of "
                    f"{self.sides} sides, so the score is at least {least} and "
                    f"P(score <= {self.target}) is 0; use a target of at least {least} or "
                    "objective 'score'"
                )
        return out

    def score_of(self, open_tiles: list[int]) -> int:
        """The final score when exactly ``open_tiles`` (increasing) are left open."""
        if self.scoring == "digital":
            return int("".join(str(t) for t in open_tiles) or "0")
        return sum(open_tiles)

    def max_score(self) -> int:
        """Score with every tile open."""
        if self.scoring == "digital":
            return int("".join(str(t) for t in range(1, self.tiles + 1)))
        return self.tiles * (self.tiles + 1) // 2

    def vector(self) -> tuple[int, ...]:
        """The rules as the scalar rules read them (slots ``R_*``): tiles, one-die mode, one-die
        sum (-1: none), mask of the tiles that must be shut for one die, objective code, target
        (-1: none), scoring (0 sum, 1 digital)."""
        return (
            self.tiles,
            MODES[self.one_die],
            -1 if self.one_die_sum is None else self.one_die_sum,
            sum(1 << (t - 1) for t in self.one_die_shut),
            OBJECTIVE_CODES[self.objective],
            -1 if self.target is None else self.target,
            int(self.scoring == "digital"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for metadata and manifests."""
        d = asdict(self)
        d["game"] = "shut-the-box"
        d["one_die_shut"] = list(self.one_die_shut)
        return d

    def slug(self) -> str:
        """A readable, deterministic variant name for a custom rule set."""
        parts = [f"stb-{self.tiles}t-{self.dice}d{self.sides}", *self.slug_rules()]
        parts.append(self.objective + (f"{self.target}" if self.target is not None else ""))
        return "-".join(parts)

    def slug_rules(self) -> list[str]:
        """The parts of a slug that name the one-die rule, the per-move cap and the scoring
        (the N-player game's slug names its dice rules with them too)."""
        parts = []
        if self.one_die != "never":
            cond = []
            if self.one_die_sum is not None:
                cond.append(f"le{self.one_die_sum}")
            if self.one_die_shut:
                cond.append("shut" + ".".join(str(t) for t in self.one_die_shut))
            parts.append(f"1d{self.one_die}" + ("-" + "-".join(cond) if cond else ""))
        if self.max_per_move is not None:
            parts.append(f"max{self.max_per_move}")
        if self.scoring != "sum":
            parts.append(self.scoring)
        return parts


def subsets_by_sum(rules: RuleSet, max_sum: int) -> list[tuple[int, int]]:
    """Every set of tiles (as (mask, sum)) with sum <= max_sum and at most the per-move cap."""
    cap = rules.max_per_move or rules.tiles
    out: list[tuple[int, int]] = []

    def extend(next_tile: int, mask: int, total: int, size: int) -> None:
        for t in range(next_tile, min(rules.tiles, max_sum - total) + 1):
            m, s = mask | (1 << (t - 1)), total + t
            out.append((m, s))
            if size + 1 < cap:
                extend(t + 1, m, s, size + 1)

    extend(1, 0, 0, 0)
    return out


def masks_by_sum(rules: RuleSet, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The compiled moves' candidates for rolls below ``width``: every set of tiles a move may
    shut (:func:`subsets_by_sum`) grouped by sum, largest mask first within a sum (the first
    tie met in a node is then the one the tie rule prefers), and where each sum's masks start
    (int64 [width + 1])."""
    import numpy as np

    by_sum: list[list[int]] = [[] for _ in range(width)]
    for mask, total in subsets_by_sum(rules, width - 1):
        by_sum[total].append(mask)
    masks = np.array([m for ms in by_sum for m in sorted(ms, reverse=True)], dtype=np.int64)
    start = np.concatenate(([0], np.cumsum([len(ms) for ms in by_sum]))).astype(np.int64)
    return masks, start


# -- the rules of one state, in numba's subset (plain Python here; compiled in kernels.py) -----


def final_score(s: int, rule: Any) -> int:
    """The final score of the open tiles ``s``: their sum, or read as digits (1, 3, 4 -> 134)."""
    score = 0
    for i in range(rule[R_TILES]):
        if (s >> i) & 1:
            score = score * 10 + i + 1 if rule[R_SCORING] == 1 else score + i + 1
    return score


def objective_value(score: int, rule: Any) -> float:
    """The objective applied to a final score: 1 or 0 for shut or a target reached, else the
    score itself."""
    if rule[R_OBJECTIVE] == 0:
        return 1.0 if score == 0 else 0.0
    if rule[R_OBJECTIVE] == 2:
        return 1.0 if score <= rule[R_TARGET] else 0.0
    return float(score)


def dice_pattern(s: int, rule: Any) -> int:
    """Which numbers of dice the open tiles ``s`` may roll (bits ONE, USUAL; none when shut):
    one die where the one-die rule's condition holds (the open tiles sum to at most its sum,
    and its tiles are shut), forced or optional, else the usual dice."""
    if s == 0:
        return 0
    total = 0
    for i in range(rule[R_TILES]):
        if (s >> i) & 1:
            total += i + 1
    cond = (rule[R_SUM] < 0 or total <= rule[R_SUM]) and (s & rule[R_NEED]) == 0
    if rule[R_MODE] == 0 or not cond:
        return USUAL
    return ONE if rule[R_MODE] == 1 else ONE | USUAL
