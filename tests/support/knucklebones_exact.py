"""Both objectives' exact values of a small Knucklebones board, solved once per test process
(the labelled-set, distilled-evaluator and artefact tests share them)."""

from __future__ import annotations

from functools import cache

import numpy as np

from pipeline.games.knucklebones.exact.solver import solve
from pipeline.games.knucklebones.game import KnuckleRules
from pipeline.games.knucklebones.players import labels


@cache
def exact(rules: KnuckleRules) -> dict[str, np.ndarray]:
    """Both objectives' exact values of a small board, by state id (within 1e-12)."""
    out = {}
    for objective in ("wins", "score"):
        board = KnuckleRules(rules.columns, rules.rows, rules.faces, objective)
        out[objective] = solve(board, tol=1e-12).values()
    return out


def lookups(rules: KnuckleRules) -> dict[str, labels.Lookup]:
    """Each objective's exact values as a lookup of state ids."""
    return {k: (lambda ids, v=v: v[ids]) for k, v in exact(rules).items()}
