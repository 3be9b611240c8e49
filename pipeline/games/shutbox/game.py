"""One-player Shut the Box: a rule set as a value object, and its game graph.

A state is the set of open tiles, its canonical id the bitmask with bit ``i - 1`` set when tile
``i`` is open (the full box of 9 tiles is 511, the shut box 0). A move shuts a set of open tiles
whose sum equals the roll; a move label is the bitmask of the tiles it shuts, so "prefer the
largest label" breaks ties towards the move holding the highest tile where two moves differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.games.base import Game, LegalMoves, SolvedView, Streamed, Stuck
from pipeline.games.dice import MoveColumns, chance_columns, chances, roll_distribution, roll_grid
from pipeline.games.shutbox.hooks import TileStrategyHooks
from pipeline.games.shutbox.rules import (  # RuleSet re-exported: the family's face
    ONE,
    USUAL,
    RuleSet,
    dice_pattern,
    final_score,
    masks_by_sum,
    objective_value,
    subsets_by_sum,
)
from pipeline.games.tiles import parse_open_tiles, parse_tiles  # noqa: F401  (re-exported)
from pipeline.graph import NO_STATE, PASS, Graph

if TYPE_CHECKING:  # polars loads lazily: the ShutTheBox command answers without it
    import polars as pl

#: Up to this many states, the rules' scalar functions (final score, value of ending, dice
#: rule) run as plain Python: an answer's check (the N-player game's best scores, from every
#: set of tiles of a box) then loads no numba (half a second of CPU and about 60 MB in
#: `serve`'s process), and a small box's build compiles one kernel fewer; the compiled rules
#: are the same functions, bit for bit (tests/games/shutbox/test_dice_rule.py).
PLAIN_STATES = 1 << 13


class ShutTheBox(TileStrategyHooks, Game):
    """The one-player game for a :class:`RuleSet`."""

    def __init__(self, rules: RuleSet, rank_order: bool = True) -> None:
        """``rank_order=False`` indexes states by id (index = bitmask) instead of by rank."""
        self.r = rules
        self.rank_order = rank_order
        self.objective = rules.objective
        self.skip_edges = rules.tiles > 16
        self.vector = rules.vector()

    def rules(self) -> dict[str, Any]:
        """The rule set as plain data."""
        return self.r.to_dict()

    @property
    def rule_vector(self) -> np.ndarray:
        """:attr:`vector` as the compiled kernels read it."""
        return np.array(self.vector, dtype=np.int64)

    @property
    def full(self) -> int:
        """State id of the box with every tile open."""
        return (1 << self.r.tiles) - 1

    def start_state(self) -> int:
        """Every tile open."""
        return self.full

    # -- rules -------------------------------------------------------------------------------

    def open_sums(self, ids: np.ndarray) -> np.ndarray:
        """Sum of the open tiles of each state."""
        total = np.zeros(ids.shape[0], dtype=np.int64)
        for i in range(self.r.tiles):
            total += ((ids >> i) & 1) * (i + 1)
        return total

    def state_rules(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each state's final score, the value of ending there and its dice pattern: the
        rules' scalar functions (:mod:`pipeline.games.shutbox.rules`), compiled, or as plain
        Python for at most :data:`PLAIN_STATES` states."""
        if ids.shape[0] <= PLAIN_STATES:
            rule = self.vector
            score = [final_score(int(s), rule) for s in ids]
            value = [objective_value(x, rule) for x in score]
            pattern = [dice_pattern(int(s), rule) for s in ids]
            return (
                np.array(score, np.int64), np.array(value, np.float64),
                np.array(pattern, np.int64),
            )  # fmt: skip
        from pipeline.games.shutbox import kernels  # numba: compiled when arrays are asked

        return kernels.state_rules(np.ascontiguousarray(ids, dtype=np.int64), self.rule_vector)

    def scores(self, ids: np.ndarray) -> np.ndarray:
        """Final score of each state if the player is stuck there."""
        return self.state_rules(ids)[0]

    def stuck_values(self, ids: np.ndarray) -> np.ndarray:
        """Value of ending the game in each state (the objective applied to its score)."""
        return self.state_rules(ids)[1]

    def dice_available(self, ids: np.ndarray) -> dict[int, np.ndarray]:
        """For each number of dice, whether it may be rolled in each state (none when shut)."""
        pattern = self.state_rules(ids)[2]
        usual = (pattern & USUAL) != 0
        if self.r.one_die == "never":
            return {self.r.dice: usual}
        return {1: (pattern & ONE) != 0, self.r.dice: usual}

    def graph(self) -> Graph:
        """The game graph over all 2**tiles states.

        States are indexed in rank order (by number of open tiles, then id), so that every
        layer of the solve is a contiguous slice of each array; or by id when asked.
        """
        n = self.r.tiles
        all_ids = np.arange(1 << n, dtype=np.int64)
        rank = np.bitwise_count(all_ids.astype(np.uint64)).astype(np.int64)
        ids = np.argsort(rank, kind="stable") if self.rank_order else all_ids  # index -> id
        index_of = np.empty_like(ids)
        index_of[ids] = np.arange(ids.shape[0])
        avail = self.dice_available(ids)
        dists = {d: roll_distribution(d, self.r.sides) for d in avail}
        roll_ok = roll_grid(ids.shape[0], avail, dists)
        node_of = (np.cumsum(roll_ok.ravel(), dtype=np.int64) - 1).astype(np.int32)
        node_state, node_roll = np.nonzero(roll_ok)

        moves = self._moves(index_of, roll_ok, node_state, ids)
        terminal = np.full(ids.shape[0], np.nan)
        terminal[index_of[0]] = self.stuck_values(all_ids[:1])[0]
        return Graph(
            state_id=ids,
            rank=rank[ids],
            terminal=terminal,
            **chance_columns(avail, dists, node_of, roll_ok.shape[1]),
            node_state=node_state.astype(np.int32),
            node_roll=node_roll.astype(np.int16),
            **moves,
            maximise=self.r.objective != "score",
            meta={"edges_skipped": self.skip_edges},
        )

    def _moves(
        self,
        index_of: np.ndarray,
        roll_ok: np.ndarray,
        node_state: np.ndarray,
        ids: np.ndarray,
    ) -> MoveColumns:
        """Every legal move, grouped by node, plus a pass row for each node without one.

        A count pass sizes each node's slots, a fill pass writes the moves into them (compiled,
        see kernels.py), so the tens of millions of rows of a big box are never sorted.
        """
        # Largest mask first inside a node: the order `best_moves` would pick among ties anyway.
        sub_masks, sub_start = masks_by_sum(self.r, roll_ok.shape[1])
        from pipeline.games.shutbox import kernels  # numba loads only to build graphs

        counts = kernels.count_moves(ids, roll_ok, sub_masks, sub_start)
        slots = np.maximum(counts, 1)
        starts = np.concatenate(([0], np.cumsum(slots, dtype=np.int64)))
        size = int(starts[-1])
        mv_dst = np.full(size, NO_STATE, dtype=np.int32)
        mv_label = np.full(size, PASS, dtype=np.int32)
        mv_scale = np.zeros(size, dtype=np.int8)
        mv_offset = np.zeros(size, dtype=np.float64)
        stuck = np.flatnonzero(counts == 0)
        mv_offset[starts[stuck]] = self.stuck_values(ids[node_state[stuck]])
        kernels.node_moves(
            ids, index_of, roll_ok, sub_masks, sub_start, starts, np.zeros(0, dtype=np.int32),
            mv_dst, mv_label, mv_scale, True,
        )  # fmt: skip
        return MoveColumns(
            mv_node=np.repeat(np.arange(counts.shape[0], dtype=np.int32), slots),
            mv_dst=mv_dst,
            mv_scale=mv_scale,
            mv_offset=mv_offset,
            mv_label=mv_label,
        )

    # -- description -------------------------------------------------------------------------

    def _tile_columns(self, masks: np.ndarray) -> pl.DataFrame:
        """Columns ``tiles`` (str) and ``open_tiles`` (list) of tile bitmasks; null for -1."""
        import polars as pl

        sep = "" if self.r.tiles <= 9 else ","
        bits = {
            f"b{t}": (masks >= 0) & ((masks >> (t - 1)) & 1 == 1)
            for t in range(1, self.r.tiles + 1)
        }
        parts = [
            pl.when(pl.col(f"b{t}")).then(pl.lit(t, dtype=pl.Int8))
            for t in range(1, self.r.tiles + 1)
        ]
        valid = pl.Series(masks >= 0)
        return pl.DataFrame(bits).select(
            tiles=pl.when(valid).then(
                pl.concat_str(
                    [p.cast(pl.String) for p in parts], separator=sep, ignore_nulls=True
                ).fill_null("")
            ),
            open_tiles=pl.when(valid).then(pl.concat_list(parts).list.drop_nulls()),
        )

    def stream(self, tables: Sequence[str]) -> Streamed:
        """The layer-by-layer compiled solve (:mod:`pipeline.games.shutbox.stream`)."""
        from pipeline.games.shutbox import stream

        wanted = tuple(tables)
        # the policy's derivable columns are left to its readers (schema.DERIVED)
        solver, batches = stream.stream_tables(
            self.r, True, "moves" in wanted, "edges" in wanted, derived=False
        )
        states = stream.state_constants(self.r, "")
        states.pop("variant")
        options = stream.parquet_options()
        return Streamed(
            tables=wanted,
            batches=batches,
            constants={"states": states},
            options={t: options[t] for t in wanted},
            n_states=1 << self.r.tiles,
            start_value=lambda: float(solver.value[self.start_state()]),
            counts=lambda: (solver.nodes, solver.moves),
        )

    # -- answers (pipeline.answer): plain Python and cached arrays, a few microseconds each ----

    def dice_allowed(self, state_id: int) -> list[int]:
        """:meth:`dice_available` of one state, fewest dice first (none when shut)."""
        pattern = dice_pattern(state_id, self.vector)
        return [d for d, bit in ((1, ONE), (self.r.dice, USUAL)) if pattern & bit]

    def roll_chances(self, state_id: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        """The dice the rules allow (fewest first) and the totals each can roll."""
        return chances(self.dice_allowed(state_id), self.r.sides)

    def legal_moves(self, state_id: int, rolls: Sequence[int]) -> LegalMoves:
        """The sets of open tiles adding up to each roll (masks, the largest first)."""
        masks, roll_of = self._candidates(tuple(int(r) for r in rolls))
        ok = (masks & state_id) == masks
        return LegalMoves(roll_of[ok], masks[ok], state_id ^ masks[ok])

    def _candidates(self, rolls: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Every set of tiles the rules let a move shut for each roll, end to end (largest mask
        first within a roll), and the roll of each; cached per tuple of rolls."""
        cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = self.__dict__.setdefault(
            "_candidate_cache", {}
        )
        found = cache.get(rolls)
        if found is None:
            top = max(rolls, default=0)
            by_roll: dict[int, list[int]] = {}
            for mask, total in subsets_by_sum(self.r, top):
                by_roll.setdefault(total, []).append(mask)
            parts = [sorted(by_roll.get(r, []), reverse=True) for r in rolls]
            found = (
                np.array([m for part in parts for m in part], dtype=np.int64),
                np.repeat(np.array(rolls, dtype=np.int64), [len(p) for p in parts]),
            )
            cache[rolls] = found
        return found

    def move_tiles(self, label: int) -> list[int]:
        """The tiles of a move's mask, increasing."""
        return mask_tiles(label)

    def state_text(self, state_id: int) -> str:
        """The open tiles as the tables write them ("1245", or "1,2,10" above nine tiles)."""
        sep = "" if self.r.tiles <= 9 else ","
        return sep.join(map(str, mask_tiles(state_id)))

    def stuck(self, state_id: int) -> Stuck:
        """Stuck, the game ends with the score of the open tiles."""
        return Stuck("end", None, self.stuck_value(state_id))

    def stuck_value(self, state_id: int) -> float:
        """:meth:`stuck_values` of one state in plain Python (the rules' own function)."""
        return objective_value(final_score(state_id, self.vector), self.vector)

    def final_score(self, state_id: int) -> int:
        """:meth:`scores` of one state in plain Python."""
        return final_score(state_id, self.vector)

    @property
    def search_in_build(self) -> bool:  # type: ignore[override]
        """`build` searches the rule family for boxes of at most 9 tiles where the rules leave
        no choice of dice (a choice multiplies the rules by its one-die thresholds)."""
        return self.r.tiles <= 9 and self.r.one_die != "optional"

    searches_rules = True

    def rule_search(self, solved: SolvedView) -> dict[str, pl.DataFrame]:
        """The rule family searched on this box (:mod:`pipeline.games.shutbox.rule_tables`)."""
        from pipeline.games.shutbox import rule_tables

        return rule_tables.build_tables(solved)

    def tile_view(self, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        """Tile strategies see tiles 1..n and the final score of each state."""
        return np.arange(1, self.r.tiles + 1, dtype=np.int64), self.scores(g.state_id)

    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Columns tiles, open_tiles, n_open, open_sum, score for each state id."""
        import polars as pl

        return self._tile_columns(state_id).with_columns(
            n_open=pl.Series(np.bitwise_count(state_id.astype(np.uint64)).astype(np.int16)),
            open_sum=pl.Series(self.open_sums(state_id).astype(np.int32)),
            score=pl.Series(self.scores(state_id)),
        )

    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """Each move label as the list of tiles it shuts (null for a pass)."""
        from pipeline.games.columns import describe_distinct

        lists = describe_distinct(label, lambda found: self._tile_columns(found)["open_tiles"])
        return lists.alias("move")

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of open tiles written as digits ("1245") or separated ("1,2,10")."""
        return parse_open_tiles(text, self.r.tiles, **extra)


#: The tiles of every value of a mask's first two bytes (bit t - 1 is tile t; byte k holds
#: tiles 8k + 1 ..): every answer lists the tiles of a few dozen masks, and joining a byte's
#: tuples takes a third of the time of reading one bit at a time (boxes of more than 16 tiles
#: are still read bit by bit).
_BYTE_TILES = tuple(
    tuple(tuple(8 * k + t + 1 for t in range(8) if byte >> t & 1) for byte in range(256))
    for k in range(2)
)


def mask_tiles(mask: int) -> list[int]:
    """The tiles of a bitmask, increasing (bit t - 1 is tile t)."""
    if mask < 256:
        return list(_BYTE_TILES[0][mask])
    if mask < 65536:
        return list(_BYTE_TILES[0][mask & 255] + _BYTE_TILES[1][mask >> 8])
    out, tile = [], 1
    while mask:
        if mask & 1:
            out.append(tile)
        mask >>= 1
        tile += 1
    return out
