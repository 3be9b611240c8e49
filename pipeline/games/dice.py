"""Distributions of dice totals, exact."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, TypedDict

from pipeline.errors import UsageError

if TYPE_CHECKING:  # numpy is loaded where dice are counted, not to check a rule set
    import numpy as np


@lru_cache(maxsize=64)
def total_counts(dice: int, sides: int) -> tuple[int, ...]:
    """Ways to roll each total 0..dice*sides with ``dice`` fair dice of ``sides`` sides (exact:
    Python's integers, one die added at a time)."""
    counts = [1]
    for _ in range(dice):
        added = [0] * (len(counts) + sides)
        for total, ways in enumerate(counts):
            for face in range(1, sides + 1):
                added[total + face] += ways
        counts = added
    return tuple(counts)


def roll_distribution(dice: int, sides: int) -> list[tuple[int, int, int]]:
    """Possible totals as (total, ways, sides**dice), in increasing total."""
    counts = total_counts(dice, sides)
    denom = sides**dice
    return [(t, c, denom) for t, c in enumerate(counts) if c]


class ChanceColumns(TypedDict):
    """A graph's chance rows (:class:`pipeline.graph.Graph`'s ``ch_*`` arrays)."""

    ch_state: np.ndarray
    ch_choice: np.ndarray
    ch_count: np.ndarray
    ch_denom: np.ndarray
    ch_node: np.ndarray


class MoveColumns(TypedDict):
    """A graph's move rows (:class:`pipeline.graph.Graph`'s ``mv_*`` arrays), grouped by node."""

    mv_node: np.ndarray
    mv_dst: np.ndarray
    mv_scale: np.ndarray
    mv_offset: np.ndarray
    mv_label: np.ndarray


def roll_grid(
    n_states: int, avail: dict[int, np.ndarray], dists: dict[int, list[tuple[int, int, int]]]
) -> np.ndarray:
    """bool [states, largest total + 1]: whether each state may roll each total (a node), from
    whether it may roll each number of dice (``avail``) and their distributions (``dists``)."""
    import numpy as np

    width = max(t for dist in dists.values() for t, _, _ in dist) + 1
    roll_ok = np.zeros((n_states, width), dtype=bool)
    for d, ok in avail.items():
        for total, _, _ in dists[d]:
            roll_ok[:, total] |= ok
    return roll_ok


def chance_columns(
    avail: dict[int, np.ndarray],
    dists: dict[int, list[tuple[int, int, int]]],
    node_of: np.ndarray,
    width: int,
) -> ChanceColumns:
    """A graph's chance rows (``ch_state``, ``ch_choice``: the dice, ``ch_count``,
    ``ch_denom``, ``ch_node``) sorted by state, then dice; ``node_of[state * width + total]``:
    the node of a state's roll."""
    import numpy as np

    ch = [_chance_rows(d, avail[d], dists[d], node_of, width) for d in sorted(avail)]
    state, choice, count, denom, node = (np.concatenate(c) for c in zip(*ch, strict=True))
    order = np.lexsort((choice, state))
    return ChanceColumns(
        ch_state=state[order], ch_choice=choice[order], ch_count=count[order],
        ch_denom=denom[order], ch_node=node[order],
    )  # fmt: skip


def _chance_rows(
    dice: int, ok: np.ndarray, dist: list[tuple[int, int, int]], node_of: np.ndarray, width: int
) -> tuple[np.ndarray, ...]:
    """Chance rows (state, dice, count, denominator, node) of every state that may roll
    ``dice`` dice."""
    import numpy as np

    states = np.flatnonzero(ok)
    totals = np.array([t for t, _, _ in dist], dtype=np.int64)
    counts = np.array([c for _, c, _ in dist], dtype=np.int64)
    st = np.repeat(states, len(dist))
    rolls = np.tile(totals, states.shape[0])
    return (
        st,
        np.full(st.shape[0], dice, dtype=np.int64),
        np.tile(counts, states.shape[0]),
        np.full(st.shape[0], dist[0][2], dtype=np.int64),
        node_of[st * width + rolls],
    )


def dice_choices(one_die: str, dice: int, small: bool) -> list[int]:
    """The numbers of dice a player may roll, fewest first, under a one-die rule (``never``,
    ``forced`` or ``optional``) where ``small`` says the position meets its condition."""
    if one_die == "never":
        return [dice]
    if one_die == "forced":
        return [1] if small else [dice]
    return [1, dice] if small else [dice]


def chances(dice: list[int], sides: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
    """Each number of dice with the totals it can roll, as (total, ways, denominator)."""
    return [(d, roll_distribution(d, sides)) for d in dice]


def range_problem(what: str, value: int, low: int, high: int) -> list[str]:
    """A one-line reason when ``value`` is outside ``low..high`` (empty when inside)."""
    return [] if low <= value <= high else [f"{what} must be between {low} and {high}, not {value}"]


def choice_problem(what: str, value: str, allowed: tuple[str, ...]) -> list[str]:
    """A one-line reason when ``value`` is not one of ``allowed`` (empty when it is)."""
    return (
        [] if value in allowed else [f"{what} must be one of {', '.join(allowed)}, not {value!r}"]
    )


class CheckedRules:
    """A rule set that cannot be made contradictory: its dataclass ``__init__`` raises UsageError
    with the first of its :meth:`problems`, so that a bad option fails where the rules are made
    (one line on the command line), never later in a solve."""

    def __post_init__(self) -> None:
        for problem in self.problems():
            raise UsageError(problem)

    def problems(self) -> list[str]:
        """Every reason the rules are contradictory or out of range (empty when valid)."""
        raise NotImplementedError


class DiceRules(CheckedRules):
    """A box's rule set with a dice rule (one-player Shut the Box, Double Shutter): ``dice``
    dice of ``sides`` sides, a one-die rule and an objective, each game with its own limits."""

    dice: int
    sides: int
    one_die: str
    objective: str

    def dice_rule_problems(
        self, max_dice: int, max_sides: int, modes: tuple[str, ...], objectives: tuple[str, ...]
    ) -> list[str]:
        """Reasons the dice rule is out of range (empty when valid): dice and sides beyond the
        game's ``max_dice`` and ``max_sides``, a one-die rule not among its ``modes`` or an
        objective not among its ``objectives``."""
        return (
            range_problem("dice", self.dice, 1, max_dice)
            + range_problem("dice sides", self.sides, 2, max_sides)
            + choice_problem("one-die rule", self.one_die, modes)
            + choice_problem("objective", self.objective, objectives)
        )


def target_problems(objective: str, target: int | None, max_score: int) -> list[str]:
    """Reasons a target score does not go with the objective (``target`` and only it has one)
    or lies outside ``0..max_score - 1`` (empty when valid)."""
    out = []
    if (objective == "target") != (target is not None):
        out.append("a target score goes with objective 'target' (and only with it)")
    if target is not None and not 0 <= target < max_score:
        out.append(f"target must be between 0 and {max_score - 1}, not {target}")
    return out
