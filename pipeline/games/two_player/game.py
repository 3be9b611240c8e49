"""Two-player Shut the Box (the course assignment): player 1 plays a whole turn, then player 2
tries to beat it.

Rules. Tiles 1..n start open for each player. The mover rolls one die when their open tiles sum to
``one_die_sum`` or less, ``dice`` dice otherwise (forced, not a choice), and shuts open tiles
summing to the roll; the turn ends when no set of open tiles makes the roll. Player 1 (P1) wins at
once by shutting the box; otherwise P1's score is the sum of P1's open tiles when stuck, and
player 2 (P2) plays from a full box. P2 wins the moment the sum of P2's open tiles is strictly
below P1's score; stuck with a sum equal to it is a tie (half a win each); above it, P1 wins.

States. A P1 state is P1's open tiles; a P2 state is P2's open tiles and P1's score. The canonical
id is ``p1_score * 2**n + mask`` (``mask``: bit i-1 set when tile i is open), so a P1 state's id
is its mask, as in one-player Shut the Box. The graph holds every P1 mask, and for every *possible*
P1 score (a sum at which some P1 position has a roll with no legal move: a P1 turn can end there)
every P2 mask. A P2 state whose open sum is below the score is terminal (P2 has already won).
For the assignment's rules the possible scores are 1..43, the same set as the scores reachable from
the full box (checked in the tests).

Values. A state's value is the expected wins of the player whose turn it is (the ``player``
column), a tie counting 1/2, terminal states included: the shut P1 box is worth 1 (to P1), a P2
state below P1's score is worth 1 (to P2). P1 stuck with sum s is a forced pass (label -1) to P2's
full box with score s, worth ``1 - V``; P2 stuck is worth 1/2 at a tie and 0 above the score.

Ranks. P2 states have rank ``popcount(mask)``, P1 states ``n + 1 + popcount(mask)``: every move
shuts at least one tile, and a pass goes from P1 to P2, so every edge goes down in rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.base import Game
from pipeline.games.dice import dice_problems, roll_distribution
from pipeline.games.shutbox.game import MAX_DICE, MAX_SIDES, RuleSet, ShutTheBox
from pipeline.games.tiles import parse_tiles
from pipeline.graph import NO_STATE, PASS, Graph

if TYPE_CHECKING:  # polars loads lazily: the ShutTheBox command answers without it
    import polars as pl

#: More tiles make (2**n masks) x (n(n+1)/2 scores) P2 states: 12 tiles is already 300,000.
MAX_TILES_TWO_PLAYER = 12
TIE = 0.5


#: Largest one-die open-sum limit accepted (any limit above the open sum of every tile is "always").
MAX_ONE_DIE_SUM = 1000


@dataclass(frozen=True)
class TwoPlayerRules:
    """The rules of the two-player game: tiles 1..``tiles``, ``dice`` dice of ``sides`` sides,
    and one die (forced) when the mover's open tiles sum to ``one_die_sum`` or less (0: never)."""

    tiles: int = 9
    dice: int = 2
    sides: int = 6
    one_die_sum: int = 6

    def __post_init__(self) -> None:
        for problem in self.problems():
            raise UsageError(problem)

    def problems(self) -> list[str]:
        """Every reason these rules are out of range (empty when valid)."""
        out: list[str] = []
        if not 1 <= self.tiles <= MAX_TILES_TWO_PLAYER:
            out.append(
                f"two-player tiles must be between 1 and {MAX_TILES_TWO_PLAYER}, not {self.tiles}"
            )
        out += dice_problems(self.dice, self.sides, MAX_DICE, MAX_SIDES)
        if self.one_die_sum < 0:
            out.append(f"the one-die open-sum limit must be 0 or more, not {self.one_die_sum}")
        elif self.one_die_sum > MAX_ONE_DIE_SUM:
            # far above any open sum (78 for 12 tiles): a typo, or a number meant to overflow
            out.append(
                f"the one-die open-sum limit must be at most {MAX_ONE_DIE_SUM}, "
                f"not {self.one_die_sum}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for metadata and manifests."""
        return {
            "game": "shut-the-box-two-player",
            "tiles": self.tiles,
            "dice": self.dice,
            "sides": self.sides,
            "one_die_sum": self.one_die_sum,
        }

    def slug(self) -> str:
        """A readable, deterministic variant name for a custom rule set."""
        return f"two-player-{self.tiles}t-{self.dice}d{self.sides}-1dle{self.one_die_sum}"

    def one_player(self) -> RuleSet:
        """The one-player rule set with the same tiles and dice: its graph gives every mask's
        rolls and moves, which both players share."""
        if self.dice == 1 or self.one_die_sum == 0:
            return RuleSet(tiles=self.tiles, dice=self.dice, sides=self.sides, objective="score")
        return RuleSet(
            tiles=self.tiles,
            dice=self.dice,
            sides=self.sides,
            one_die="forced",
            one_die_sum=self.one_die_sum,
            objective="score",
        )


class TwoPlayer(Game):
    """The two-player game for a :class:`TwoPlayerRules`; values are the mover's expected wins."""

    objective = "wins"

    def __init__(self, rules: TwoPlayerRules | None = None) -> None:
        self.r = rules or TwoPlayerRules()
        self.base = ShutTheBox(self.r.one_player(), rank_order=False)

    def rules(self) -> dict[str, Any]:
        """The rule set as plain data."""
        return self.r.to_dict()

    @property
    def n_masks(self) -> int:
        """Number of tile masks, 2**tiles (P1 score s's P2 ids start at s * n_masks)."""
        return 1 << self.r.tiles

    @property
    def full(self) -> int:
        """Mask of the box with every tile open."""
        return self.n_masks - 1

    def start_state(self) -> int:
        """P1 with every tile open."""
        return self.full

    def state_id(self, mask: int, p1_score: int = 0) -> int:
        """Canonical id of a state: P1's (p1_score 0) or P2's with P1's score."""
        return p1_score * self.n_masks + mask

    # -- rules -------------------------------------------------------------------------------

    @cached_property
    def one_player_graph(self) -> Graph:
        """Rolls and moves of every mask, shared by both players (state index = mask)."""
        return self.base.graph()

    @cached_property
    def possible_scores(self) -> np.ndarray:
        """Sorted P1 scores a P1 turn can end with: open sums of masks with a roll and no move.

        Worked out from subset sums rather than from the graph, so that checking a user's
        P1 score (the ShutTheBox command reading tables) needs no graph build.
        """
        masks = np.arange(self.n_masks, dtype=np.int64)
        makeable = [1] * self.n_masks  # bit k set: some subset of the mask sums to k
        for m in range(1, self.n_masks):
            low = m & -m
            rest = makeable[m ^ low]
            makeable[m] = rest | (rest << low.bit_length())
        stuck = np.zeros(self.n_masks, dtype=bool)
        for dice, ok in self.base.dice_available(masks).items():
            for total, _, _ in roll_distribution(dice, self.r.sides):
                blocked = np.array([not (b >> total) & 1 for b in makeable])
                stuck |= ok & blocked
        sums = self.base.open_sums(masks[stuck])
        return np.unique(sums[sums > 0])

    @cached_property
    def _possible_set(self) -> frozenset[int]:
        return frozenset(self.possible_scores.tolist())

    def scores_from_start(self) -> np.ndarray:
        """Sorted P1 scores reachable from the full box (for comparison with possible_scores)."""
        b = self.one_player_graph
        reach = np.zeros(self.n_masks, dtype=bool)
        reach[self.full] = True
        src = b.node_state[b.mv_node]
        count = np.bitwise_count(src.astype(np.uint64))
        real = b.mv_label != PASS
        for layer in range(self.r.tiles, 0, -1):  # moves only go to fewer open tiles
            hit = real & (count == layer) & reach[src]
            reach[b.mv_dst[hit]] = True
        stuck = b.node_state[b.mv_node[~real]]
        sums = self.base.open_sums(stuck[reach[stuck]])
        return np.unique(sums[sums > 0])

    def graph(self) -> Graph:
        """P1's block of masks, then one block of P2 masks per possible P1 score."""
        scores = self.possible_scores
        parts: dict[str, list[np.ndarray]] = {}
        n_nodes = 0
        for block, score in enumerate([0, *scores.tolist()]):
            arrays = self._block(block, score, n_nodes)
            for key, arr in arrays.items():
                parts.setdefault(key, []).append(arr)
            n_nodes += arrays["node_state"].shape[0]

        def joined(key: str) -> np.ndarray:
            return np.concatenate(parts[key])

        return Graph(
            state_id=joined("state_id"),
            rank=joined("rank"),
            terminal=joined("terminal"),
            ch_state=joined("ch_state"),
            ch_choice=joined("ch_choice"),
            ch_count=joined("ch_count"),
            ch_denom=joined("ch_denom"),
            ch_node=joined("ch_node"),
            node_state=joined("node_state"),
            node_roll=joined("node_roll"),
            mv_node=joined("mv_node"),
            mv_dst=joined("mv_dst"),
            mv_scale=joined("mv_scale"),
            mv_offset=joined("mv_offset"),
            mv_label=joined("mv_label"),
            maximise=True,
            meta={"possible_scores": scores.tolist()},
        )

    def _block(self, block: int, score: int, first_node: int) -> dict[str, np.ndarray]:
        """Graph arrays of one block: P1's (score 0) or P2's against ``score``, whose states are
        ``block * 2**tiles + mask`` and whose decision nodes are numbered from ``first_node``."""
        b, f = self.one_player_graph, self.n_masks
        masks = np.arange(f, dtype=np.int64)
        sums = self.base.open_sums(masks)
        count = np.bitwise_count(masks.astype(np.uint64)).astype(np.int64)
        alive = masks != 0 if score == 0 else sums >= score
        keep_node = alive[b.node_state]
        node_map = np.where(keep_node, np.cumsum(keep_node) - 1 + first_node, -1)
        keep_ch = alive[b.ch_state]
        keep_mv = keep_node[b.mv_node]
        mv_pass = b.mv_label[keep_mv] == PASS
        mv_sum = sums[b.node_state[b.mv_node[keep_mv]]]
        dst = np.where(mv_pass, NO_STATE, block * f + b.mv_dst[keep_mv])
        if score == 0:  # P1 stuck: P2 plays from the full box against this score
            block_of_score = np.zeros(int(sums[-1]) + 1, dtype=np.int64)
            block_of_score[self.possible_scores] = np.arange(1, self.possible_scores.shape[0] + 1)
            dst = np.where(mv_pass, block_of_score[mv_sum] * f + self.full, dst)
            scale = np.where(mv_pass, -1.0, 1.0)
            offset = np.where(mv_pass, 1.0, 0.0)
        else:  # P2 stuck: a tie at the score, a loss above it
            scale = np.where(mv_pass, 0.0, 1.0)
            offset = np.where(mv_pass & (mv_sum == score), TIE, 0.0)
        return {
            "state_id": score * f + masks,
            "rank": count if score else count + self.r.tiles + 1,
            "terminal": np.where(alive, np.nan, 1.0),
            "ch_state": block * f + b.ch_state[keep_ch],
            "ch_choice": b.ch_choice[keep_ch],
            "ch_count": b.ch_count[keep_ch],
            "ch_denom": b.ch_denom[keep_ch],
            "ch_node": node_map[b.ch_node[keep_ch]],
            "node_state": block * f + b.node_state[keep_node],
            "node_roll": b.node_roll[keep_node],
            "mv_node": node_map[b.mv_node[keep_mv]],
            "mv_dst": dst,
            "mv_scale": scale,
            "mv_offset": offset,
            "mv_label": b.mv_label[keep_mv],
        }

    # -- description -------------------------------------------------------------------------

    def split_ids(self, state_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mask, p1_score) of each state id; p1_score 0 for P1 states."""
        ids = np.asarray(state_id, dtype=np.int64)
        return ids & self.full, ids >> self.r.tiles

    def describe_states(self, state_id: np.ndarray) -> pl.DataFrame:
        """Columns tiles, open_tiles, player, p1_score (null for P1), n_open, open_sum, score."""
        import polars as pl

        mask, p1 = self.split_ids(state_id)
        sums = self.base.open_sums(mask)
        return self.base._tile_columns(mask).with_columns(
            player=pl.Series(np.where(p1 == 0, 1, 2), dtype=pl.Int8),
            p1_score=pl.Series(p1, dtype=pl.Int16).replace(0, None),
            n_open=pl.Series(np.bitwise_count(mask.astype(np.uint64)).astype(np.int16)),
            open_sum=pl.Series(sums.astype(np.int32)),
            score=pl.Series(sums),
        )

    def describe_moves(self, label: np.ndarray) -> pl.Series:
        """Each move label as the list of tiles it shuts (null for a pass)."""
        return self.base.describe_moves(label)

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of open tiles ("1245"): P1's without ``p1_score``, P2's with it."""
        mask = parse_tiles(text, self.r.tiles)
        score = extra.get("p1_score")
        if score is None:
            return mask
        self.check_p1_score(int(score))
        return self.state_id(mask, int(score))

    def check_p1_score(self, score: int) -> None:
        """UsageError unless P1 can finish a turn with ``score`` (positive and possible)."""
        if score <= 0:
            raise UsageError(
                f"player 1's score must be positive, not {score} (at 0 player 1 has shut the box "
                "and won)"
            )
        if score not in self._possible_set:
            raise UsageError(
                f"player 1 cannot finish a turn with score {score}; possible scores: "
                f"{ranges_text(self.possible_scores.tolist())}"
            )


def ranges_text(values: list[int]) -> str:
    """Sorted integers as compact ranges: [1, 2, 3, 5] -> "1..3, 5"."""
    out: list[str] = []
    start = prev = None
    for v in [*values, None]:
        if v is not None and prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}..{prev}")
        start = prev = v
    return ", ".join(out)
