"""The strategies stage: the rule family searched on one box, as the ``strategy_search`` and
``strategy_exceptions`` tables (:meth:`ShutTheBox.rule_search
<pipeline.games.shutbox.game.ShutTheBox.rule_search>`).

For each objective of the box (:func:`pipeline.games.shutbox.rule_search.objectives`):

- ``strategy_search``: optimal play; the eight named strategies (they roll the dice the variant's
  own solver rolls); the best :data:`~pipeline.games.shutbox.rule_search.TOP` distinct rules of
  one, two and three keys (a rule is listed with the fewest keys that play it), each priced
  exactly, with P(shut) and the expected final score of the same play;
- ``strategy_exceptions``: for the best rule (of at most three keys), the curve of
  :mod:`pipeline.games.shutbox.rule_exceptions` (row ``n`` = 0 the rule alone, then each
  exception in words, up to :data:`~pipeline.games.shutbox.rule_exceptions.MAX_EXCEPTIONS`).

Boxes without a graph (13 tiles or more, built by the streamed solver) are not searched: the
stage never sees them.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import cast

import numpy as np
import polars as pl

from pipeline.games.base import SolvedView
from pipeline.games.shutbox import benchmark, rule_exceptions, rule_search, strategy_kernels
from pipeline.games.shutbox.rule_exceptions import Curve, Override
from pipeline.games.shutbox.rule_family import MAX_KEYS, Rule
from pipeline.games.shutbox.rule_keys import Box, BoxRules, box_rules, encode
from pipeline.games.shutbox.rule_search import Objective, Searched
from pipeline.games.shutbox.rules import RuleSet
from pipeline.games.shutbox.strategies import get_strategy
from pipeline.games.tiles import TileCodec
from pipeline.graph import Graph
from pipeline.solve import policy_eval

#: Dice counts in words, for the exceptions' text.
DICE_WORDS = {1: "one die", 2: "two dice", 3: "three dice"}


@dataclass(frozen=True)
class BoxSearch:
    """Everything the tables show of one box: the search, and each objective's curves."""

    box: Box
    view: BoxRules
    searched: Searched
    curves: dict[str, tuple[Rule, Curve]]
    """Objective -> its best rule (of at most three keys) and that rule's exceptions."""


def run_search(s: SolvedView) -> BoxSearch | None:
    """Search the rule family on a solved box and compute every curve; None for a game that is
    not a one-player box (one whose rules are a :class:`~pipeline.games.shutbox.rules.RuleSet`).

    Two boxes with the same dice rules and scoring search the same rules for the same
    objectives (``classic`` and ``classic-score``: only which objective is their own differs),
    so the last search is kept and the next box takes it when it is such a twin: a build meets
    them one after the other.
    """
    if not isinstance(getattr(s.game, "r", None), RuleSet) or s.graph.cyclic:
        return None
    game = cast(Box, s.game)
    key = _twin_key(game.r)
    with _LAST_LOCK:
        last = _LAST.get(key)
    if last is not None:
        return _own_first(last, game)
    g, start = s.graph, benchmark.start_index(s)
    view = box_rules(game, g)
    found = rule_search.search(view, rule_search.objectives(game, g, s.solve(), start))
    curves = {}
    for name, obj in found.objectives.items():
        rule, _ = found.best_within(name, MAX_KEYS)
        rows, choice = view.rule_rows(rule), view.choice_for(rule.one_die_at_most)
        curves[name] = (rule, rule_exceptions.curve(obj, rows, choice))
    searched = BoxSearch(game, view, found, curves)
    with _LAST_LOCK:
        _LAST.clear()
        _LAST[key] = searched
    return searched


#: The last box searched, by its twin key (see :func:`run_search`).
_LAST: dict[tuple, BoxSearch] = {}
_LAST_LOCK = threading.Lock()


def _twin_key(rules: RuleSet) -> tuple:
    """What makes two boxes' searches the same: every rule but which objective is their own
    (a target score makes an objective of its own, so it stays in the key)."""
    fields = rules.to_dict()
    fields.pop("objective")
    return tuple(sorted((k, str(v)) for k, v in fields.items()))


def _own_first(found: BoxSearch, game: Box) -> BoxSearch:
    """A twin's search with ``game``'s own objective first (the tables list it first)."""
    own = game.r.objective
    order = [own, *(name for name in found.searched.objectives if name != own)]
    searched = dataclasses.replace(
        found.searched, objectives={n: found.searched.objectives[n] for n in order}
    )
    curves = {n: found.curves[n] for n in order}
    return BoxSearch(game, found.view, searched, curves)


def build_tables(s: SolvedView) -> dict[str, pl.DataFrame]:
    """The stage's tables, ``strategy_search`` and ``strategy_exceptions``, of one box (none
    when the game is not a one-player box)."""
    found = run_search(s)
    if found is None:
        return {}
    named = benchmark.evaluate_strategies(s)
    return {
        "strategy_search": search_rows(s, found, named),
        "strategy_exceptions": exception_rows(found),
    }


def search_rows(s: SolvedView, found: BoxSearch, named: list[benchmark.Evaluated]) -> pl.DataFrame:
    """The ``strategy_search`` rows of one box: per objective, optimal play, the named
    strategies, then the best rules by number of keys."""
    start = benchmark.start_index(s)
    best = {
        name: [found.searched.best(name, size) for size in range(1, MAX_KEYS + 1)]
        for name in found.searched.objectives
    }
    rules = [rule for part in best.values() for top in part for rule, *_ in top]
    outcomes = _outcomes(found, rules)
    rows: list[dict] = []
    for name, obj in found.searched.objectives.items():
        shut, mean = _optimal_outcomes(found, obj)
        rows.append(
            _row(
                name, "optimal", None, None, "the solver's best move", "optimal", None, obj.optimum
            )
            | _priced(obj, obj.optimum, shut, mean)
        )
        for e in named:
            value = {"shut": e.win_rate, "score": e.expected_score}.get(name, e.value[start])
            strategy = get_strategy(e.name)
            size = len([k for k, _ in strategy.keys if k != "label"]) or None
            rows.append(
                _row(name, "named", size, None, strategy.rule, e.name, None, float(value))
                | _priced(obj, float(value), e.win_rate, e.expected_score)
            )
        rows += _rule_rows(found, name, obj, best[name], outcomes)
    return pl.DataFrame(rows, schema=_SEARCH_SCHEMA, orient="row")


def _rule_rows(
    found: BoxSearch,
    name: str,
    obj: Objective,
    best: list[list[tuple[Rule, int, float]]],
    outcomes: dict[Rule, tuple[float, float]],
) -> list[dict]:
    """The best rules of each size for one objective, with their outcomes."""
    searched = found.searched
    out = []
    for size, top in enumerate(best, 1):
        tried = int((searched.sizes == size).sum())
        distinct = int((searched.simplest == size).sum())
        for rank, (rule, equivalent, value) in enumerate(top, 1):
            row = _row(name, "rule", size, rank, rule.text, rule.spec, rule.one_die_at_most, value)
            out.append(
                row
                | _priced(obj, value, *outcomes[rule])
                | {"equivalent": equivalent, "searched": tried, "policies": distinct}
            )
    return out


def _outcome_graphs(found: BoxSearch) -> list[Graph]:
    """The box's graph priced for P(shut) and for the expected final score."""
    g = found.view.graph
    return [rule_search.objective_graph(found.box, g, name) for name in ("shut", "score")]


def _outcomes(found: BoxSearch, rules: list[Rule]) -> dict[Rule, tuple[float, float]]:
    """P(shut) and the expected final score of each rule's play, priced together (one pass per
    one-die threshold)."""
    view, graphs = found.view, _outcome_graphs(found)
    start = next(iter(found.searched.objectives.values())).start
    out: dict[Rule, tuple[float, float]] = {}
    for threshold in dict.fromkeys(r.one_die_at_most for r in rules):
        mine = list(dict.fromkeys(r for r in rules if r.one_die_at_most == threshold))
        ranked = view.ranked(threshold)
        picks = np.zeros((len(mine), ranked.sizes.shape[0]), dtype=np.uint8)
        for k, rule in enumerate(mine):
            strategy_kernels.pick_rule(ranked.patterns, ranked.sizes, encode([rule])[0], picks[k])
        classes = np.full(view.starts.shape[0] - 1, -1, dtype=np.int64)
        classes[view.multi] = ranked.pattern_of
        values = policy_eval.evaluate_picks(graphs, view.starts[:-1], classes, picks, ranked.choice)
        for k, rule in enumerate(mine):
            out[rule] = (float(values[0, k, start]), float(values[1, k, start]))
    return out


def _optimal_outcomes(found: BoxSearch, obj: Objective) -> tuple[float, float]:
    """P(shut) and the expected final score of optimal play for ``obj``."""
    rows = rule_search.optimal_rows(obj)
    classes = np.full(rows.shape[0], -1, dtype=np.int64)  # one policy: no choice left to pick
    none = np.zeros((1, 0), dtype=np.uint8)
    graphs = _outcome_graphs(found)
    values = policy_eval.evaluate_picks(graphs, rows, classes, none, obj.solution.choice)
    return float(values[0, 0, obj.start]), float(values[1, 0, obj.start])


def _row(
    objective: str,
    kind: str,
    size: int | None,
    rank: int | None,
    text: str,
    spec: str,
    one_die: int | None,
    value: float,
) -> dict:
    """The first columns of a ``strategy_search`` row (the rule counts: null)."""
    return {
        "objective": objective,
        "kind": kind,
        "size": size,
        "rank": rank,
        "rule": text,
        "spec": spec,
        "one_die_at_most": one_die,
        "value": value,
        "equivalent": None,
        "searched": None,
        "policies": None,
    }


def _priced(obj: Objective, value: float, shut: float, mean: float) -> dict:
    """A row's gap to optimal play and the outcomes of its play."""
    return {"gap": float(obj.gap(value)), "p_shut": shut, "expected_score": mean}


_SEARCH_SCHEMA = pl.Schema(
    {
        "objective": pl.String(),
        "kind": pl.String(),
        "size": pl.Int8(),
        "rank": pl.Int16(),
        "rule": pl.String(),
        "spec": pl.String(),
        "one_die_at_most": pl.Int16(),
        "value": pl.Float64(),
        "gap": pl.Float64(),
        "p_shut": pl.Float64(),
        "expected_score": pl.Float64(),
        "equivalent": pl.Int32(),
        "searched": pl.Int64(),
        "policies": pl.Int64(),
    }
)


def exception_rows(found: BoxSearch) -> pl.DataFrame:
    """The ``strategy_exceptions`` rows: per objective, the best rule alone (n = 0) and then
    each exception with the value after it."""
    g = found.view.graph
    rows: list[dict] = []
    for name, (rule, curve) in found.curves.items():
        obj = found.searched.objectives[name]
        alone = dict.fromkeys(_EXCEPTION_SCHEMA.names())
        alone |= {
            "objective": name,
            "size": rule.size,
            "spec": rule.spec,
            "n": 0,
            "exception": f"no exception: {rule.text.lower()}",
            "value": curve.start_value,
            "gap": float(obj.gap(curve.start_value)),
        }
        rows.append(alone)
        for n, o in enumerate(curve.overrides, 1):
            rows.append(_exception_row(found, g, name, rule, n, o, obj))
    return pl.DataFrame(rows, schema=_EXCEPTION_SCHEMA, orient="row")


def _exception_row(
    found: BoxSearch, g: Graph, name: str, rule: Rule, n: int, o: Override, obj: Objective
) -> dict:
    """One exception as a row, with its words."""
    mask = int(g.state_id[o.state])
    codec = TileCodec(found.box.r.tiles)
    move = codec.tiles(int(g.mv_label[o.row])) if o.node >= 0 else None
    instead = codec.tiles(int(g.mv_label[o.replaced])) if o.node >= 0 else None
    roll = int(g.node_roll[o.node]) if o.node >= 0 else None
    return {
        "objective": name,
        "size": rule.size,
        "spec": rule.spec,
        "n": n,
        "state_id": mask,
        "tiles": codec.text(mask),
        "roll": roll,
        "move": move,
        "instead_of": instead,
        "dice": o.dice or None,
        "instead_of_dice": o.replaced_dice or None,
        "exception": words(codec.tiles(mask), roll, move, instead, o.dice, o.replaced_dice),
        "reach": o.reach,
        "gain": o.gain,
        "value": o.value,
        "gap": float(obj.gap(o.value)),
    }


_EXCEPTION_SCHEMA = pl.Schema(
    {
        "objective": pl.String(),
        "size": pl.Int8(),
        "spec": pl.String(),
        "n": pl.Int16(),
        "state_id": pl.Int64(),
        "tiles": pl.String(),
        "roll": pl.Int16(),
        "move": pl.List(pl.Int8),
        "instead_of": pl.List(pl.Int8),
        "dice": pl.Int16(),
        "instead_of_dice": pl.Int16(),
        "exception": pl.String(),
        "reach": pl.Float64(),
        "gain": pl.Float64(),
        "value": pl.Float64(),
        "gap": pl.Float64(),
    }
)


def words(
    open_tiles: list[int],
    roll: int | None,
    move: list[int] | None,
    instead: list[int] | None,
    dice: int = 0,
    instead_dice: int = 0,
) -> str:
    """An exception as a player reads it: "with 1 2 3 7 open and a roll of 7, shut 7, not 3 4"
    (a move), or "with 1 2 4 open, roll one die, not two dice" (the dice)."""
    where = " ".join(str(t) for t in open_tiles)
    if move is not None and instead is not None and roll is not None:
        shut = " ".join(str(t) for t in move)
        other = " ".join(str(t) for t in instead)
        return f"with {where} open and a roll of {roll}, shut {shut}, not {other}"
    roll_words = DICE_WORDS.get(dice, f"{dice} dice")
    not_words = DICE_WORDS.get(instead_dice, f"{instead_dice} dice")
    return f"with {where} open, roll {roll_words}, not {not_words}"
