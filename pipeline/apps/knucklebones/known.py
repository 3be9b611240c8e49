"""The built tables of a Knucklebones board checked on a sample: the Bellman equation on
positions drawn uniformly, both objectives, for `knucklebones check-tables` and `verify` (the
full game's 4.8 billion rows per objective cannot all be read).

The values are read as every answer reads them, through the answer layer's index
(:meth:`pipeline.store.states.Index.sorted_states`: the full game's lean tables a row group at a
time, with pyarrow), and the tables of a board are found by the rules their ``states`` files
record (:mod:`pipeline.store.directory`), so custom builds of the same board and die
serve too. Nothing here needs polars or DuckDB but `verify`'s report (a GPU machine has
neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.answer.answers import Answers, for_dir
from pipeline.errors import TableError, UsageError
from pipeline.games.knucklebones.game import KnuckleRules, board_game
from pipeline.store import directory, tables
from pipeline.store.footers import open_file

if TYPE_CHECKING:
    from pipeline.analysis.contracts import ContractResult
    from pipeline.games.registry import Variant


def built(answers: Answers | None, rules: KnuckleRules) -> tuple[Variant | None, str | None]:
    """The built variants of ``answers``' data directory holding the tables of the board and
    die of ``rules``: its objective's, as a variant the answers take (perfect play's), and its
    twin's name (:meth:`pipeline.answer.boards.Boards.variant`; None where not built)."""
    from pipeline.games.knucklebones.columns import BoardRules

    if answers is None:
        return None, None
    return answers.boards.variant(BoardRules(board_game(rules)))


@dataclass(frozen=True)
class SampleCheck:
    """The Bellman equation checked on a seeded sample of one built board's positions."""

    variants: tuple[str, str]
    samples: int
    seed: int
    live: tuple[int, int]
    """Sampled positions where the game goes on (the others are checked against their final
    value), per objective."""
    max_residual: tuple[float, float]
    """Largest |value - its Bellman recomputation from the successors' values|, per objective."""
    allowed: tuple[float, float]
    """The tables' ``residual`` plus the float32 rounding of the values read: what may be."""

    @property
    def ok(self) -> bool:
        """Whether every sampled position meets its allowance."""
        return all(m <= a for m, a in zip(self.max_residual, self.allowed, strict=True))


def check_sample(data_dir: Path, rules: KnuckleRules, samples: int, seed: int) -> SampleCheck:
    """The Bellman residual of ``samples`` positions drawn uniformly (``seed``) from the built
    tables of ``rules``' board, both objectives: a position's value must equal the mean over the
    die of its best move's value (``1 - V(next)`` for wins, ``-V(next)`` for score), or its
    final value once a board is full, within the table's residual. Reads one row group per
    position looked up (the sample and its successors): for the full game about a minute per
    hundred samples. UsageError when either objective is not built."""
    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.game import Knucklebones

    answers = for_dir(data_dir) if Path(data_dir).is_dir() else None
    own, score = built(answers, rules)
    if answers is None or own is None or score is None:
        raise UsageError(
            f"no built wins and score tables of the {rules.columns}x{rules.rows} d{rules.faces} "
            f"board in {data_dir}"
        )
    wins = own.name
    game = board_game(rules)
    n = game.n_states
    ids = np.unique(np.random.default_rng(seed).integers(0, n, size=samples))
    pos = exact.pairs_of(game.r, ids)
    over = game.terminal_mask(pos)
    succ = exact.successor_ids(game.r, ids)
    succ[over] = -1
    wanted = np.unique(np.concatenate([ids, succ[succ >= 0]]))
    names = (wins, score)
    got = np.stack([answers.index.sorted_states(name).values(wanted) for name in names], axis=1)
    if np.isnan(got).any():
        raise TableError(f"{wins} or {score} lacks positions of its board; rebuild it")
    at = {int(s): k for k, s in enumerate(wanted)}
    residual_col = [_residual(answers.index.path("states", name)) for name in names]
    worst, live = [0.0, 0.0], [0, 0]
    for k, objective in enumerate(("wins", "score")):
        offset = 1.0 if objective == "wins" else 0.0
        final = Knucklebones(KnuckleRules(rules.columns, rules.rows, rules.faces, objective))
        finals = final.final_values(pos)
        for i, s in enumerate(ids):
            value = got[at[int(s)], k]
            if over[i]:
                recomputed = finals[i]
            else:
                live[k] += 1
                moves = succ[i].reshape(rules.faces, rules.columns)
                best = [max(offset - got[at[int(r)], k] for r in row if r >= 0) for row in moves]
                recomputed = float(np.mean(best))
            worst[k] = max(worst[k], abs(value - recomputed))
    # the values read are float32: each is within half an ulp of the stored bound's midpoint
    scale = (1.0, float(game.r.slots * game.r.faces * game.r.rows))
    allowed = tuple(residual_col[k] + 4 * scale[k] * 2.0**-24 for k in range(2))
    return SampleCheck(
        names, int(ids.shape[0]), seed, (live[0], live[1]), (worst[0], worst[1]),
        (allowed[0], allowed[1]),
    )  # fmt: skip


def _residual(path: Path) -> float:
    """The ``residual`` of a states file (the first row's: the lean tables write one constant;
    0 when null)."""
    found = open_file(path)
    if "residual" not in found.columns or found.rows.size == 0:
        return 0.0
    return float(found.first(["residual"])["residual"] or 0.0)


#: Positions the `verify` command's Bellman check samples on each lean board (`knucklebones
#: check-tables --samples N` takes more), and its seed.
VERIFY_SAMPLES = 32
VERIFY_SEED = 1


def verify_lean_boards(data_dir: Path, variant: str | None = None) -> list[ContractResult]:
    """`verify`'s check of the boards stored lean (the full game built on a GPU: no edges for
    the SQL Bellman contract): the Bellman equation on :data:`VERIFY_SAMPLES` positions drawn
    uniformly (:func:`check_sample`), both objectives. One result per board (only the board of
    ``variant`` when given); skipped when one objective is not built."""
    import polars as pl

    from pipeline.analysis.contracts import ContractResult

    boards: dict[tuple[int, int, int], set[str]] = {}
    for name, rule in directory.of(data_dir).snapshot().recorded.items():
        path = tables.variant_file(data_dir, "states", name)
        if rule.get("game") == "knucklebones" and tables.declared_columns(path) is not None:
            boards.setdefault((rule["columns"], rule["rows"], rule["faces"]), set()).add(name)
    out = []
    for (c, r, f), names in sorted(boards.items()):
        if variant is not None and variant not in names:
            continue
        title = f"Bellman equation of {', '.join(sorted(names))}, sampled"
        description = (
            f"{VERIFY_SAMPLES} positions drawn uniformly (seed {VERIFY_SEED}) equal the mean "
            "over the die of their best move's value, read from their successors' rows"
        )
        rules = KnuckleRules(c, r, f)
        if None in built(for_dir(data_dir), rules):
            out.append(
                ContractResult("bellman_sampled", description, pl.DataFrame(),
                               "needs both objectives built", title=title)
            )  # fmt: skip
            continue
        found = check_sample(data_dir, rules, VERIFY_SAMPLES, VERIFY_SEED)
        bad = [
            (found.variants[k], found.max_residual[k], found.allowed[k])
            for k in range(2)
            if found.max_residual[k] > found.allowed[k]
        ]
        violations = pl.DataFrame(
            bad,
            schema={"variant": pl.String, "max_residual": pl.Float64, "allowed": pl.Float64},
            orient="row",
        )
        out.append(
            ContractResult("bellman_sampled", description, violations, checked=2 * found.samples,
                           title=title)
        )  # fmt: skip
    return out
