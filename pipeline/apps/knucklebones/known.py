"""Exact values of solved Knucklebones boards, for the search to look up instead of estimate.

The boards built by `stb-pipeline build` (``knucklebones-2x2``, ``-2x3``, ``-3x2``, ``-3x3-d4``)
have every position's exact value in the ``states`` table (the shared file, or the variant's own
file for the boards stored on their own): one variant maximising the win
probability, its ``-score`` twin the expected final score difference. A search over one of
these boards reads both and returns them wherever it meets a position, so its answers are
exact. The variants are found by their rules (the ``stb.rules`` metadata of ``states``), so
custom builds with the same board and die serve too.

The full game (``knucklebones`` and ``knucklebones-score``, built on a GPU by ``build --device
cuda``) has 4.8 billion positions: it is not loaded but looked up, a row group at a time
(:class:`TableLookup`); a move's value is its successor's, so the best column for a die needs at
most ``columns`` lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pipeline.errors import TableError
from pipeline.games.knucklebones.game import MAX_GRAPH_STATES, KnuckleRules
from pipeline.store import tables

if TYPE_CHECKING:
    from pipeline.analysis.contracts import ContractResult

# The tables are read with pyarrow (a GPU machine has no polars); polars loads only to report
# the verify contract.


@dataclass(frozen=True)
class KnownValues:
    """Exact (win, diff) of every state of one board and die, rows by state id."""

    values: np.ndarray
    """[states, 2]: P(win) under win-maximising play, E[difference] under score-maximising play."""
    variants: tuple[str, str]
    """The variants read: (wins, score)."""


def table_variants(data_dir: Path, rules: KnuckleRules) -> tuple[str, str] | None:
    """The built (wins, score) variants with the board and die of ``rules``; None if either is
    missing (no states table, or only one objective built)."""
    found = _variant_files(data_dir, rules)
    return None if found is None else (found[0][0], found[1][0])


def _states_rules(data_dir: Path) -> dict[str, tuple[dict, Path]]:
    """Every built variant's rule set and the file holding its states: the shared
    ``states.parquet`` or a variant's own file (the big boards live in their own)."""
    tables.settle(data_dir)  # a commit in progress or interrupted: finish it before reading
    by_variant: dict[str, tuple[dict, Path]] = {}
    for path in tables.table_files(data_dir, "states"):
        try:
            file_rules = tables.file_rules(path)
        except (pa.ArrowException, OSError, ValueError):
            raise TableError(f"{path} is not a readable table; move it away and rebuild") from None
        by_variant.update({v: (r, path) for v, r in file_rules.items()})
    return by_variant


def _board_variants(data_dir: Path, rules: KnuckleRules) -> dict[str, list[tuple[str, Path]]]:
    """(variant, states file) of each objective built of the board and die of ``rules``, in
    name order (objectives not built: absent)."""
    by_variant = _states_rules(data_dir)
    found = {}
    for objective in ("wins", "score"):
        want = {**rules.to_dict(), "objective": objective}
        names = sorted(v for v, (r, _) in by_variant.items() if r == want)
        if names:
            found[objective] = [(v, by_variant[v][1]) for v in names]
    return found


def _variant_files(data_dir: Path, rules: KnuckleRules) -> list[tuple[str, Path]] | None:
    """(variant, file holding its states) for the wins and the score objective of ``rules``;
    None unless both are built."""
    built = _board_variants(data_dir, rules)
    if len(built) < 2:
        return None
    return [built["wins"][0], built["score"][0]]


def missing_twin(data_dir: Path, rules: KnuckleRules) -> tuple[str, str] | None:
    """(the built variant, the objective missing) when exactly one objective of the board of
    ``rules`` is built: its exact answers need both tables. None otherwise."""
    built = _board_variants(data_dir, rules)
    if len(built) != 1:
        return None
    ((objective, found),) = built.items()
    return found[0][0], "score" if objective == "wins" else "wins"


def load_known(data_dir: Path, rules: KnuckleRules, n_states: int) -> KnownValues | None:
    """Both objectives' exact values for the board of ``rules``, or None when not built.

    Reads only the two variants' ``state_id`` and ``value`` columns (a filter pushed down to the
    Parquet row groups), once, with pyarrow; TableError if a variant does not hold every state.
    """
    import pyarrow.parquet as pq

    if n_states > MAX_GRAPH_STATES:
        return None  # never built (the full game): do not touch the tables at all
    found = _variant_files(data_dir, rules)
    if found is None:
        return None
    out = np.full((n_states, 2), np.nan)
    for k, (name, path) in enumerate(found):
        rows = pq.read_table(path, columns=["state_id", "value"], filters=[("variant", "=", name)])
        ids = rows.column("state_id").to_numpy()
        if rows.num_rows != n_states or ids.min() < 0 or ids.max() >= n_states:
            raise TableError(
                f"{path}: variant {name} holds {rows.num_rows:,} states, expected {n_states:,}; "
                f"rebuild it with `stb-pipeline build --variant {name}`"
            )
        out[ids, k] = rows.column("value").to_numpy()
    if np.isnan(out).any():
        raise TableError(f"{found[0][0]} or {found[1][0]} has states without a value")
    return KnownValues(out, (found[0][0], found[1][0]))


class TableLookup:
    """Point lookups of both objectives' values in the states tables of a board too big to load
    (the full game, built by ``build --device cuda``: one lean row per position, sorted by
    state id, in row groups whose ``state_id`` statistics say their id range).

    A lookup reads the row group holding the id from each of the two files (one each, about
    5 MB): the files' footers are read once, on opening.
    """

    def __init__(self, found: list[tuple[str, Path]]) -> None:
        import pyarrow.parquet as pq

        self.variants = (found[0][0], found[1][0])
        self.files = [pq.ParquetFile(path) for _, path in found]
        self.starts: list[np.ndarray] = []
        self.value_col: list[int] = []
        for f, (name, path) in zip(self.files, found, strict=True):
            names = f.schema_arrow.names
            sid, self_value = names.index("state_id"), names.index("value")
            meta = f.metadata
            starts = []
            for g in range(meta.num_row_groups):
                stats = meta.row_group(g).column(sid).statistics
                if stats is None or not stats.has_min_max:
                    raise TableError(f"{path}: row group {g} has no state_id statistics")
                starts.append(stats.min)
            self.starts.append(np.asarray(starts, dtype=np.int64))
            self.value_col.append(self_value)
            if meta.num_rows and not np.all(np.diff(self.starts[-1]) > 0):
                raise TableError(f"{path}: {name} is not sorted by state id; rebuild it")
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def values(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), 2]: (P(win), E[difference]) of each state id, from the tables."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.shape[0], 2))
        for k in range(2):
            group = np.searchsorted(self.starts[k], ids, side="right") - 1
            for g in np.unique(group):
                col = self._group(k, int(g))
                at = ids[group == g] - self.starts[k][g]
                out[group == g, k] = col[at]
        return out

    def _group(self, k: int, g: int) -> np.ndarray:
        """The ``value`` column of row group ``g`` of file ``k`` (the last few are kept)."""
        key = (k, g)
        if key not in self._cache:
            if len(self._cache) >= 64:
                self._cache.pop(next(iter(self._cache)))
            table = self.files[k].read_row_group(g, columns=["value"])
            self._cache[key] = table.column(0).to_numpy()
        return self._cache[key]


def open_lookup(data_dir: Path, rules: KnuckleRules) -> TableLookup | None:
    """Point lookups in the built (wins, score) states tables of ``rules``' board, or None when
    either is not built. For the boards too big for :func:`load_known` (the full game)."""
    found = _variant_files(data_dir, rules)
    return None if found is None else TableLookup(found)


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
    hundred samples. TablesMissingError-like UsageError when either objective is not built."""
    from pipeline.errors import UsageError
    from pipeline.games.knucklebones import exact
    from pipeline.games.knucklebones.game import Knucklebones

    found = _variant_files(data_dir, rules)
    if found is None:
        raise UsageError(
            f"no built wins and score tables of the {rules.columns}x{rules.rows} d{rules.faces} "
            f"board in {data_dir}"
        )
    lookup = TableLookup(found)
    game = Knucklebones(KnuckleRules(rules.columns, rules.rows, rules.faces))
    n = game.n_states
    ids = np.unique(np.random.default_rng(seed).integers(0, n, size=samples))
    pos = exact.pairs_of(game.r, ids)
    over = game.terminal_mask(pos)
    succ = exact.successor_ids(game.r, ids)
    succ[over] = -1
    wanted = np.unique(np.concatenate([ids, succ[succ >= 0]]))
    got = lookup.values(wanted)
    at = {int(s): k for k, s in enumerate(wanted)}
    residual_col = [_residual(path) for _, path in found]
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
                recomputed = float(
                    np.mean(
                        [max(offset - got[at[int(r)], k] for r in row if r >= 0) for row in moves]
                    )
                )
            worst[k] = max(worst[k], abs(value - recomputed))
    # the values read are float32: each is within half an ulp of the stored bound's midpoint
    scale = (1.0, float(game.r.slots * game.r.faces * game.r.rows))
    allowed = tuple(residual_col[k] + 4 * scale[k] * 2.0**-24 for k in range(2))
    return SampleCheck(
        lookup.variants, int(ids.shape[0]), seed, (live[0], live[1]), (worst[0], worst[1]),
        (allowed[0], allowed[1]),
    )  # fmt: skip


def _residual(path: Path) -> float:
    """The ``residual`` of a states file (the first row's: the lean tables write one constant;
    0 when null)."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    if "residual" not in f.schema_arrow.names or f.metadata.num_row_groups == 0:
        return 0.0
    first = f.read_row_group(0, columns=["residual"]).column(0)[0].as_py()
    return float(first or 0.0)


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
    for name, (rule, path) in _states_rules(data_dir).items():
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
        if table_variants(data_dir, rules) is None:
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
