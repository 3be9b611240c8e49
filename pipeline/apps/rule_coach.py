"""Coaching against a rule a person can remember: what the rule plays, and its exceptions.

`play --rule NAME` tells the player, at each choice, what the rule would do and, where the rule
is wrong enough to be worth an exception, what to do instead ("the rule says 3 4; here the
exception is 7"). NAME is ``best`` (the best rule the search found for the variant's
objective, of at most three keys; ``best-1``, ``best-2`` for fewer keys), one of the named
strategies that are rules of the family (``greedy``, ...), or a rule written as its spec
(``max-high,min-count``). The exceptions are the first
:data:`~pipeline.games.shutbox.rule_exceptions.MAX_EXCEPTIONS` of the rule's curve
(:mod:`pipeline.games.shutbox.rule_exceptions`), computed here as `build` computes them, so
for ``best`` they are the rows of ``strategy_exceptions``.

Everything the teaching game needs is :meth:`RuleCoach.advice`: one line of text, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.errors import TablesMissingError, UsageError
from pipeline.games.registry import Variant
from pipeline.games.shutbox import rule_exceptions, rule_search
from pipeline.games.shutbox.game import ShutTheBox
from pipeline.games.shutbox.rule_family import MAX_KEYS, NAMED_RULES, Rule, parse_spec
from pipeline.games.shutbox.rule_keys import box_rules
from pipeline.games.shutbox.rule_tables import DICE_WORDS
from pipeline.games.tiles import TileCodec
from pipeline.solve.rank_order import solve_rank_order
from pipeline.store import tables


@dataclass(frozen=True)
class Learnt:
    """One exception as the coach says it: its place on the list and what to play instead of
    the rule (``instead``: the rule's move; empty for the dice)."""

    n: int
    play: str
    instead: str


@dataclass(frozen=True)
class RuleCoach:
    """A rule's move at every (state, roll), its dice in every state, and its exceptions."""

    rule: Rule
    name: str
    moves: dict[tuple[int, int], str]
    """(state id, roll) -> the tiles the rule shuts, where it has a choice of moves."""
    dice: dict[int, str]
    """State id -> the dice the rule rolls, where the rules offer a choice."""
    exceptions: dict[tuple[int, int | None], Learnt]
    """(state id, roll; None for the dice) -> the exception there."""
    count: int
    """How many exceptions the coach knows."""

    @property
    def label(self) -> str:
        """How the coach names the rule."""
        return self.name if self.name == self.rule.spec else f"{self.name}: {self.rule.spec}"

    def advice(self, state_id: int, roll: int | None) -> str | None:
        """What the rule says at a move (``roll``) or before the roll (None), and the exception
        there if there is one; None where the rule has nothing to choose."""
        said = self.moves.get((state_id, roll)) if roll is not None else self.dice.get(state_id)
        if said is None:
            return None
        verb = "says" if roll is not None else "rolls"
        line = f"The rule ({self.label}) {verb} {said}"
        found = self.exceptions.get((state_id, roll))
        if found is None:
            return line + "."
        return f"{line}; here the exception (#{found.n} of {self.count}) is {found.play}."


def rule_coach(data_dir: Path, variant: Variant, name: str) -> RuleCoach:
    """The coach for rule ``name`` on a one-player box; UsageError for a game without rules, an
    unknown name, or ``best`` on a variant whose search is not built."""
    game = variant.make()
    if not isinstance(game, ShutTheBox):
        raise UsageError(f"--rule coaches one-player Shut the Box boxes; {variant.name} is not one")
    rule = resolve(data_dir, variant.name, name)
    g = game.graph()
    view = box_rules(game, g)
    if rule.one_die_at_most is None and view.has_choice:
        rule = Rule(rule.keys, 0)  # a rule that does not say when to roll one die never does
    start = int(np.flatnonzero(g.state_id == game.start_state())[0])
    own = rule_search.Objective(game.r.objective, g, solve_rank_order(g), start)
    rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
    curve = rule_exceptions.curve(own, rows, choice)
    codec = TileCodec(game.r.tiles)
    legal = np.bincount(g.mv_node[g.mv_label >= 0], minlength=g.node_state.shape[0])
    moves = {
        (int(g.state_id[g.node_state[n]]), int(g.node_roll[n])): _tiles(
            codec, int(g.mv_label[rows[n]])
        )
        for n in np.flatnonzero(legal >= 2).tolist()
    }
    dice = {
        int(g.state_id[s]): DICE_WORDS.get(int(choice[s]), f"{int(choice[s])} dice")
        for s in np.flatnonzero(view.one_die).tolist()
    }
    exceptions: dict[tuple[int, int | None], Learnt] = {}
    for n, o in enumerate(curve.overrides, 1):
        state = int(g.state_id[o.state])
        if o.node >= 0:
            key = (state, int(g.node_roll[o.node]))
            play = _tiles(codec, int(g.mv_label[o.row]))
            instead = _tiles(codec, int(g.mv_label[o.replaced]))
            exceptions[key] = Learnt(n, play, instead)
        else:
            exceptions[(state, None)] = Learnt(n, DICE_WORDS.get(o.dice, f"{o.dice} dice"), "")
    return RuleCoach(rule, name, moves, dice, exceptions, len(curve.overrides))


def resolve(data_dir: Path, variant: str, name: str) -> Rule:
    """The rule ``name`` stands for (see the module's text)."""
    if name == "best":
        return best_rule(data_dir, variant, MAX_KEYS)
    if name.startswith("best-"):
        digits = name[len("best-") :]  # the number of keys
        if digits not in {str(k) for k in range(1, MAX_KEYS + 1)}:
            raise UsageError(f"--rule {name!r}: write best, or best-K with K from 1 to {MAX_KEYS}")
        return best_rule(data_dir, variant, int(digits))
    if name in NAMED_RULES:
        return parse_spec(NAMED_RULES[name])
    if "-" not in name:
        named = ", ".join(NAMED_RULES)
        raise UsageError(
            f"--rule {name!r}: give best, best-1, best-2, a strategy that is a rule ({named}) "
            "or a rule's keys, e.g. max-high,min-count"
        )
    return parse_spec(name)


def best_rule(data_dir: Path, variant: str, size: int) -> Rule:
    """The best rule of at most ``size`` keys for the variant's own objective, from
    ``strategy_search`` (fewer keys win a tie)."""
    try:
        found = tables.read_table(data_dir, "strategy_search", variant)
    except TablesMissingError:
        raise UsageError(
            f"--rule best needs the rule search of {variant}: run `stb-pipeline strategies "
            f"--variant {variant}` first"
        ) from None
    states = tables.read_table(data_dir, "states", variant).select("objective").head(1)
    own = str(states["objective"][0]) if states.height else str(found["objective"][0])
    rules = found.filter(
        (pl.col("objective") == own) & (pl.col("kind") == "rule") & (pl.col("size") <= size)
    ).sort("gap", "size", "rank")
    if rules.height == 0:
        raise UsageError(f"strategy_search has no rules of {variant} for objective {own}")
    return parse_spec(str(rules["spec"][0]))


def _tiles(codec: TileCodec, label: int) -> str:
    """A move's tiles as the teaching game writes them ("3 4")."""
    return " ".join(str(t) for t in codec.tiles(label))
