"""The explorer page: one self-contained HTML file to look up any position of the small
one-player Shut the Box variants and of the N-player games (its value, every player's share, and
every legal move ranked with its regret).

The solved tables are embedded as JSON, one object per variant, with arrays indexed by state id
(the bitmask of open tiles), so the page needs no server and no network:

``value[s]``
    ``states.value``: the value of state ``s`` under optimal play.
``dice[s]``, ``choice[s]``
    ``states.dice`` (the optimal number of dice, 0 when terminal) and ``states.choice_options``
    (2 where the player may roll one die or ``rules.dice``).
``end[s]``
    the final value when no move is legal in ``s`` (``policy.value`` of its stuck rows; null
    when ``s`` is never stuck).
``moves[s]``
    ``[[roll, mask, mask, ...], ...]``: the legal moves of each roll with a legal move, as
    bitmasks of the tiles shut; the policy's move first, the others by the tie rule (the larger
    mask first). The page ranks them as `stb-pipeline move` does: least regret first, the
    policy's move first among equal regrets (then the larger mask).
``rolls``
    ``{dice: [[roll, prob], ...]}``, from ``edges``.

A move's value is not stored: it is ``value[s & ~mask]``, the value of the state it leads to, and
its regret is ``max((best - value) * sign, 0)`` with ``best`` the best value of the roll (the
pipeline's own formula). :func:`check_against_tables` proves, before the page is written, that
these rebuild the ``moves`` and ``policy`` values bit for bit, so the page shows the tables'
numbers while staying small (twelve tiles: 66,048 moves in well under a megabyte).

An N-player variant (``"kind": "nplayer"``; see :func:`nplayer_payload`) is one such box per
block (a seat facing the best score so far, held by some players): the legal moves, dice and
rolls of a mask are the same in every block, so they are stored once, and each block adds every
player's share of each mask (``states.share_*``), the mover's value when stuck, and the few
policy moves the tie rule does not pick out by itself. A variant whose data would pass
:data:`MAX_VARIANT_BYTES` is listed on the page as too big (browse it with `stb-pipeline
serve`) instead of embedded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.errors import PipelineError, TableError, TablesMissingError, UsageError
from pipeline.games.dice import roll_distribution
from pipeline.games.nplayer.game import NPlayer
from pipeline.games.registry import get_variant
from pipeline.games.shutbox.game import ShutTheBox
from pipeline.solve.tolerance import TIE_TOLERANCE
from pipeline.store import tables
from pipeline.store.manifest import REBUILD
from pipeline.store.outputs import make_dir

#: The variants the page offers by default (those built): every registered one-player Shut the
#: Box variant (twelve tiles is the largest: 4,096 states, about 0.5 MB of the page), then the
#: N-player ones (those stored in files of their own are built by name, so they are often absent).
ONE_PLAYER_VARIANTS: tuple[str, ...] = (
    "classic",
    "classic-score",
    "lever",
    "one-die-6",
    "one-die-6-max2",
    "six-tiles-one-die",
    "digital-score",
    "twelve-tiles",
)
NPLAYER_VARIANTS: tuple[str, ...] = (
    "two-player",
    "three-player",
    "three-player-two-dice",
    "four-player",
    "two-player-stake",
)
DEFAULT_VARIANTS: tuple[str, ...] = ONE_PLAYER_VARIANTS + NPLAYER_VARIANTS
#: The most JSON one variant may embed: four players (259 blocks of 512 masks, every player's
#: share of each) take about 6 MB; the stake game's digital scores make 395 blocks of long
#: numbers, which a page should not carry (browse it with `stb-pipeline serve`).
MAX_VARIANT_BYTES = 8_000_000
#: Blocks of an N-player variant checked at a time (memory: a few tens of MB each).
CHECK_BLOCKS = 16
#: Why a variant is listed but not embedded, and where to see it instead.
TOO_BIG = "too big to embed ({mb:.1f} MB of data; the page takes {limit:.0f} MB a variant)"
ELSEWHERE = "browse it with `stb-pipeline serve`, or ask `stb-pipeline move --variant {name}`"
#: The largest box the page accepts: its arrays hold 2**tiles states.
MAX_TILES = 12
#: Output file name inside the data directory.
DEFAULT_NAME = "explorer.html"
#: Where the JSON goes in the template.
DATA_MARK = "/*EXPLORER_DATA*/null"
#: Seconds of work after which progress is reported.
PROGRESS_AFTER = 2.0


class ExplorerTablesMissing(TablesMissingError):
    """A variant the page should show has not been built. Exit 1, not the 2 of the lookup
    commands: no page can be written (see the README's exit codes)."""

    exit_code = 1


@dataclass
class ExplorerPage:
    """What :func:`write_explorer` wrote."""

    path: Path
    variants: list[str]
    size: int
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Variants left out, each with the reason: a default not built, or one too big to embed
    (listed on the page too)."""


Progress = Callable[[str], None]


def pick_names(names: list[str]) -> tuple[list[str], bool]:
    """The variants asked for (comma-separated or repeated; ``all`` or none: the defaults), and
    whether they were named explicitly (then each must be built). UsageError for a variant that
    is not Shut the Box, for one player or for N (the page draws one row of tiles)."""
    flat = [part for name in names for part in name.split(",") if part]
    if not flat or flat == ["all"]:
        return list(DEFAULT_VARIANTS), False
    chosen: list[str] = []
    for part in flat:
        chosen += DEFAULT_VARIANTS if part == "all" else [get_variant(part).name]
    for name in chosen:
        if not isinstance(get_variant(name).make(), ShutTheBox | NPlayer):
            raise UsageError(
                f"the explorer shows Shut the Box variants, not {name} "
                f"(try: {', '.join(DEFAULT_VARIANTS)})"
            )
    return list(dict.fromkeys(chosen)), True


def check_rules(name: str, rules: dict[str, Any] | None) -> dict[str, Any]:
    """The variant's rules from the tables' metadata; UsageError when the page cannot show it."""
    if rules is None or rules.get("game") not in ("shut-the-box", "shut-the-box-n-player"):
        kind = "not built" if rules is None else f"a {rules.get('game', 'different')} game"
        raise UsageError(
            f"the explorer shows Shut the Box variants; {name} is {kind} "
            f"(try: {', '.join(DEFAULT_VARIANTS)})"
        )
    if rules["tiles"] > MAX_TILES:
        raise UsageError(
            f"{name} has {rules['tiles']} tiles; the explorer takes at most {MAX_TILES}"
        )
    return rules


def is_nplayer(name: str) -> bool:
    """Whether ``name`` is a game of players in turn (no edges table: its rolls come from the
    rules)."""
    return isinstance(get_variant(name).make(), NPlayer)


def built_rules(data_dir: Path, name: str) -> dict[str, Any] | None:
    """The rules ``name`` was built with, or None when a table the page reads lacks it (in the
    shared file or the variant's own, ``variants/<name>/``)."""
    found: dict[str, Any] | None = None
    needed = (
        ("states", "policy", "moves")
        if is_nplayer(name)
        else ("states", "policy", "moves", "edges")
    )
    for table in needed:
        path = tables.variant_file(data_dir, table, name)
        if not path.exists():
            return None
        try:
            rules = tables.file_rules(path).get(name)
        except (OSError, ValueError) as exc:
            raise TableError(f"{path} is unreadable: {exc}") from None
        if rules is None:
            return None
        found = rules
    return found


def state_arrays(data_dir: Path, name: str, tiles: int) -> dict[str, Any]:
    """``value``, ``dice`` and ``choice`` by state id, and ``maximise``, from ``states``."""
    states = tables.read_table(data_dir, "states", name).sort("state_id")
    if states["state_id"].to_list() != list(range(1 << tiles)):
        raise TableError(f"states of {name} are not the 2**{tiles} boxes; rebuild it")
    if states["value"].null_count():
        raise ExplorerTablesMissing(
            f"{name} is enumerated but not solved: run `stb-pipeline build --variant {name}`"
        )
    return {
        "value": states["value"].to_list(),
        "dice": states["dice"].fill_null(0).to_list(),
        "choice": states["choice_options"].to_list(),
        "maximise": bool(states["maximise"].all()),
    }


def ranked_moves(data_dir: Path, name: str) -> pl.DataFrame:
    """Every legal move with its mask (``state_id - next_state_id``: a move clears its tiles'
    bits), in the order the page stores them: the policy's move first in each (state, roll),
    then by the tie rule (the larger mask first). The page ranks them by regret."""
    moves = tables.read_table(data_dir, "moves", name).select(
        "state_id", "roll", "next_state_id", "value", "regret", "is_best"
    )
    return moves.with_columns(mask=pl.col("state_id") - pl.col("next_state_id")).sort(
        ["state_id", "roll", "is_best", "mask"], descending=[False, False, True, True]
    )


def move_lists(moves: pl.DataFrame, n_states: int) -> list[list[list[int]]]:
    """``[[roll, mask, ...], ...]`` for each state id, from the ranked moves."""
    out: list[list[list[int]]] = [[] for _ in range(n_states)]
    for state, roll, mask in moves.select("state_id", "roll", "mask").iter_rows():
        rows = out[state]
        if not rows or rows[-1][0] != roll:
            rows.append([roll])
        rows[-1].append(mask)
    return out


def end_values(policy: pl.DataFrame, n_states: int) -> list[float | None]:
    """The final value of each state when a roll leaves no legal move (None: never stuck)."""
    out: list[float | None] = [None] * n_states
    for state, value in policy.filter(pl.col("stuck")).select("state_id", "value").iter_rows():
        out[state] = value
    return out


def roll_table(data_dir: Path, name: str) -> dict[str, list[list[float]]]:
    """``{dice: [[roll, prob], ...]}``: the totals each number of dice can roll, from ``edges``."""
    edges = tables.read_table(data_dir, "edges", name).select("dice", "roll", "prob").unique()
    out: dict[str, list[list[float]]] = {}
    for dice, roll, prob in edges.sort("dice", "roll").iter_rows():
        out.setdefault(str(dice), []).append([roll, prob])
    return out


def check_against_tables(
    values: list[float], moves: pl.DataFrame, policy: pl.DataFrame, maximise: bool
) -> None:
    """Prove that the page's formulas give the tables' numbers exactly: each move's value is the
    value of the state it leads to, its regret ``max((best - value) * sign, 0)``, and the
    policy's value the best move value, and one move per roll is the policy's. TableError (the
    tables disagree: run verify) otherwise."""
    sign = 1.0 if maximise else -1.0
    lookup = pl.DataFrame({"next_state_id": range(len(values)), "derived": values})
    joined = moves.join(lookup, on="next_state_id", how="left")
    best = pl.col("derived").max() if maximise else pl.col("derived").min()
    joined = joined.with_columns(best=best.over("state_id", "roll"))
    joined = joined.with_columns(
        derived_regret=pl.max_horizontal((pl.col("best") - pl.col("derived")) * sign, 0.0)
    )
    bad_moves = joined.filter(
        (pl.col("derived") != pl.col("value")) | (pl.col("derived_regret") != pl.col("regret"))
    )
    node_best = joined.group_by("state_id", "roll").agg(
        pl.col("best").first(), n_best=pl.col("is_best").sum()
    )
    bad_policy = (
        policy.filter(~pl.col("stuck"))
        .join(node_best, on=["state_id", "roll"], how="left")
        .filter(
            pl.col("best").is_null()
            | (pl.col("best") != pl.col("value"))
            | (pl.col("n_best") != 1)  # the page takes the policy's move to be the one marked
        )
    )
    if bad_moves.height or bad_policy.height:
        raise TableError(
            f"{bad_moves.height} moves and {bad_policy.height} policy rows disagree with the "
            "states table; run `stb-pipeline verify` and rebuild"
        )


def variant_payload(data_dir: Path, name: str, rules: dict[str, Any]) -> dict[str, Any]:
    """Everything the page needs about one variant (see the module docstring)."""
    n_states = 1 << rules["tiles"]
    arrays = state_arrays(data_dir, name, rules["tiles"])
    moves = ranked_moves(data_dir, name)
    policy = tables.read_table(data_dir, "policy", name).select(
        "state_id", "roll", "stuck", "value"
    )
    check_against_tables(arrays["value"], moves, policy, arrays["maximise"])
    return {
        "name": name,
        "description": get_variant(name).description,
        "rules": rules,
        **arrays,
        "end": end_values(policy, n_states),
        "moves": move_lists(moves, n_states),
        "rolls": roll_table(data_dir, name),
    }


def read_columns(data_dir: Path, table: str, name: str, columns: list[str]) -> pl.DataFrame:
    """Only ``columns`` of ``name``'s rows of ``table`` (base columns, never derived ones): the
    four-player moves table is 1.5 million rows, whose text and list columns the page never
    reads. TableError when the file cannot be read."""
    path = tables.variant_file(data_dir, table, name)
    try:
        lazy = pl.scan_parquet(path).filter(pl.col("variant") == name).select(columns)
        return lazy.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path} is not a readable table ({first}); {REBUILD}") from None


def nplayer_states(data_dir: Path, name: str, rules: dict[str, Any]) -> pl.DataFrame:
    """The N-player ``states`` rows by id, with ``block`` and ``mask``; checked to be whole
    blocks of every mask, solved, each value the mover's share (to the tie tolerance: the
    two-player graph solve and the share solve may differ in the last bit), with no choice of
    dice, and
    terminal exactly where the page takes them to be (a shut box; with the share payoff, the
    last player already below the best score)."""
    tiles, n = rules["tiles"], rules["players"]
    shares = [f"share_{k}" for k in range(1, n + 1)]
    tables.settle(data_dir)  # as every reader: finish an interrupted commit, sweep temporaries
    states = (
        read_columns(
            data_dir,
            "states",
            name,
            [
                "state_id",
                "player",
                "best_score",
                "best_count",
                "score",
                "terminal",
                "value",
                "dice",
                "choice_options",
                "share_holder",
                "share_beaten",
                *shares,
            ],
        )
        .sort("state_id")
        .with_columns(
            block=(pl.col("state_id") // (1 << tiles)), mask=pl.col("state_id") & ((1 << tiles) - 1)
        )
    )
    if states["value"].null_count():
        raise ExplorerTablesMissing(
            f"{name} is enumerated but not solved: run `stb-pipeline build --variant {name}`"
        )
    sizes = states.group_by("block").agg(n=pl.len(), low=pl.col("mask").min())
    if sizes.filter((pl.col("n") != 1 << tiles) | (pl.col("low") != 0)).height:
        raise TableError(f"states of {name} are not whole blocks of 2**{tiles} boxes; rebuild it")
    if states["choice_options"].max() > 1:  # type: ignore[operator]
        raise UsageError(
            f"{name} lets the mover choose the number of dice; the explorer shows N-player "
            "variants whose rules set the dice"
        )
    mine = pl.coalesce(
        [pl.when(pl.col("player") == k).then(pl.col(f"share_{k}")) for k in range(1, n + 1)]
    )
    below = (pl.col("player") == n) & (pl.col("score") < pl.col("best_score"))
    ends = (pl.col("mask") == 0) | (below.fill_null(False) & (rules["payoff"] == "share"))
    first = states.filter(pl.col("block") == 0).select("mask", first_dice=pl.col("dice"))
    bad = states.join(first, on="mask").filter(
        ((pl.col("value") - mine).abs() > TIE_TOLERANCE)
        | (pl.col("terminal") != ends)
        | (~pl.col("terminal") & (pl.col("dice") != pl.col("first_dice")))
    )
    if bad.height:
        raise TableError(
            f"{bad.height} states of {name} disagree with the page's reading of them (value = "
            "the mover's share, the same dice in every block); run `stb-pipeline verify`"
        )
    return states


def nplayer_moves(
    states: pl.DataFrame, moves: pl.DataFrame, policy: pl.DataFrame, tiles: int
) -> tuple[pl.DataFrame, list[list[int]]]:
    """Player 1's legal moves (the same in every block), sorted by (mask, roll, larger move
    first), and the policy's moves that the tie rule does not pick out by itself, as
    ``[block, mask, roll, move]``.

    Proves, as :func:`check_against_tables` does for one player, that each move's value is the
    mover's value of the box it leaves (in the same block), its regret ``max(best - value, 0)``,
    the policy's value the best, and that every block has player 1's moves. TableError else."""
    full = (1 << tiles) - 1
    moves = moves.with_columns(
        block=(pl.col("state_id") // (1 << tiles)),
        mask=pl.col("state_id") & full,
        move=(pl.col("state_id") - pl.col("next_state_id")),
    )
    first = moves.filter(pl.col("block") == 0).select("mask", "roll", "move")
    count_first = first.group_by("mask", "roll").agg(n_first=pl.len())
    numbers = states["block"].unique().sort().to_list()  # sparse: see NPlayer.block_of
    bad = [0, 0, 0]
    picks: list[list[int]] = []
    # a few blocks at a time: the checks' joins over all of four players' 1.5 million moves
    # would hold half a gigabyte at once
    for at in range(0, len(numbers), CHECK_BLOCKS):
        low, high = numbers[at], numbers[min(at + CHECK_BLOCKS, len(numbers)) - 1]
        span = pl.col("state_id").is_between(low << tiles, ((high + 1) << tiles) - 1)
        counts, found = _check_moves(
            states.filter(span), moves.filter(span), policy.filter(span), first, count_first, tiles
        )
        bad = [a + b for a, b in zip(bad, counts, strict=True)]
        picks += found
    if any(bad):
        raise TableError(
            f"{bad[0]} moves, {bad[1]} rolls and {bad[2]} policy rows disagree with the states "
            "table; run `stb-pipeline verify` and rebuild"
        )
    return first.sort(["mask", "roll", "move"], descending=[False, False, True]), picks


def _check_moves(
    states: pl.DataFrame,
    moves: pl.DataFrame,
    policy: pl.DataFrame,
    first: pl.DataFrame,
    count_first: pl.DataFrame,
    tiles: int,
) -> tuple[list[int], list[list[int]]]:
    """:func:`nplayer_moves`'s checks on some whole blocks: the number of moves, rolls and
    policy rows that disagree, and the policy moves off the tie rule."""
    lookup = states.select(next_state_id="state_id", derived="value")
    joined = moves.join(lookup, on="next_state_id", how="left").with_columns(
        best=pl.col("derived").max().over("state_id", "roll")
    )
    tol = TIE_TOLERANCE * pl.max_horizontal(1.0, pl.col("best").abs())
    joined = joined.with_columns(
        derived_regret=pl.max_horizontal(pl.col("best") - pl.col("derived"), 0.0),
        tie=(pl.col("derived") - pl.col("best")).abs() <= tol,
    )
    bad_moves = joined.filter(
        pl.col("derived").is_null()
        | ((pl.col("next_state_id") // (1 << tiles)) != pl.col("block"))
        | (pl.col("derived") != pl.col("value"))
        | (pl.col("derived_regret") != pl.col("regret"))
    ).height
    nodes = joined.group_by("state_id", "block", "mask", "roll").agg(
        pl.col("best").first(),
        n=pl.len(),
        n_best=pl.col("is_best").sum(),
        table_pick=pl.col("move").filter(pl.col("is_best")).first(),
        rule_pick=pl.col("move").filter(pl.col("tie")).max(),
    )
    nodes = nodes.join(count_first, on=["mask", "roll"], how="left")
    strange = joined.join(first, on=["mask", "roll", "move"], how="anti").height
    bad_nodes = nodes.filter((pl.col("n_best") != 1) | (pl.col("n") != pl.col("n_first"))).height
    bad_policy = (
        policy.filter(~pl.col("stuck"))
        .join(nodes, on=["state_id", "roll"], how="left")
        .filter(pl.col("best").is_null() | (pl.col("best") != pl.col("value")))
        .height
    )
    picks = (
        nodes.filter(pl.col("table_pick") != pl.col("rule_pick"))
        .sort("state_id", "roll")
        .select("block", "mask", "roll", "table_pick")
    )
    return [bad_moves + strange, bad_nodes, bad_policy], [list(row) for row in picks.iter_rows()]


def nplayer_payload(data_dir: Path, name: str, rules: dict[str, Any]) -> dict[str, Any]:
    """Everything the page needs about one N-player variant.

    ``scores[mask]`` each box's score; ``possible`` the scores a turn can end with (the best
    scores a later seat can face); ``dice[mask]``, ``moves[mask]`` and ``rolls`` as for one
    player, the same in every block (player 1's); ``blocks["seat/best/count"]`` (``1/0/0`` for
    player 1) with ``shares`` (``holder``: each earlier player holding the best score,
    ``beaten``: each earlier player beaten, ``"k"``: player k after the mover, ``value``: the
    mover's (``states.value``); arrays by mask, the states table's columns) and ``end`` (the
    mover's value when a roll leaves no move, by the score's place in ``possible``; null where
    the block is never stuck with that score); ``picks``: ``[block key, mask, roll, move]``
    where the policy's move is not the tie rule's (within 1e-12 of the best, the larger tile
    mask), usually none."""
    tiles, n = rules["tiles"], rules["players"]
    full = (1 << tiles) - 1
    states = nplayer_states(data_dir, name, rules)
    blocks: dict[str, dict[str, Any]] = {}
    keys: dict[int, str] = {}
    for part in states.partition_by("block", maintain_order=True):
        block, seat = part["block"][0], part["player"][0]
        best, count = part["best_score"][0] or 0, part["best_count"][0] or 0
        keys[block] = f"{seat}/{best}/{count}"
        # the mover's own share is ``value`` (the moves table's values come from it)
        shares: dict[str, list[float]] = {"value": part["value"].to_list()}
        if seat > 1:
            shares["holder"] = part["share_holder"].to_list()
        if seat - 1 > count:
            shares["beaten"] = part["share_beaten"].to_list()
        for k in range(seat + 1, n + 1):
            shares[str(k)] = part[f"share_{k}"].to_list()
        blocks[keys[block]] = {"shares": shares}
    # the shares are most of the data: a variant too big stops here, before its moves are read
    if (size := size_of(blocks)) > MAX_VARIANT_BYTES:
        raise TooBig(size)
    moves = read_columns(
        data_dir,
        "moves",
        name,
        ["state_id", "roll", "next_state_id", "value", "regret", "is_best"],
    )
    policy = read_columns(data_dir, "policy", name, ["state_id", "roll", "stuck", "value"])
    first, picks = nplayer_moves(states, moves, policy, tiles)
    lists: list[list[list[int]]] = [[] for _ in range(full + 1)]
    for mask, roll, move in first.iter_rows():
        rows = lists[mask]
        if not rows or rows[-1][0] != roll:
            rows.append([roll])
        rows[-1].append(move)
    player1 = states.filter(pl.col("block") == 0)
    possible = sorted(states["best_score"].drop_nulls().unique().to_list())
    place = {score: i for i, score in enumerate(possible)}
    stuck = (
        policy.filter(pl.col("stuck"))
        .join(states.select("state_id", "block", "score"), on="state_id")
        .group_by("block", "score")
        .agg(pl.col("value").min(), high=pl.col("value").max())
    )
    if stuck.filter(pl.col("value") != pl.col("high")).height:
        raise TableError(f"{name}: a stuck roll's value is not its score's; rebuild it")
    for key in blocks.values():
        key["end"] = [None] * len(possible)
    for block, score, value, _ in stuck.iter_rows():
        blocks[keys[block]]["end"][place[score]] = value
    used = sorted(d for d in player1["dice"].drop_nulls().unique().to_list() if d)
    return {
        "name": name,
        "kind": "nplayer",
        "description": get_variant(name).description,
        "rules": rules,
        "players": n,
        "scores": player1["score"].to_list(),
        "possible": possible,
        "dice": player1["dice"].fill_null(0).to_list(),
        "moves": lists,
        "rolls": {
            str(d): [[t, ways / denom] for t, ways, denom in roll_distribution(d, rules["sides"])]
            for d in used
        },
        "blocks": blocks,
        "picks": [[keys[b], mask, roll, move] for b, mask, roll, move in picks],
    }


class TooBig(Exception):
    """A variant's data would pass :data:`MAX_VARIANT_BYTES` (``size``: at least this many)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def payload_of(data_dir: Path, name: str, rules: dict[str, Any]) -> dict[str, Any]:
    """The payload of a one-player or an N-player variant."""
    if rules.get("game") == "shut-the-box-n-player":
        return nplayer_payload(data_dir, name, rules)
    return variant_payload(data_dir, name, rules)


def size_of(payload: Any) -> int:
    """Bytes of JSON the payload adds to the page."""
    return len(json.dumps(payload, separators=(",", ":"), allow_nan=False))


def collect(
    data_dir: Path, names: list[str], explicit: bool, progress: Progress | None = None
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[dict[str, str]]]:
    """The payload of each variant; the variants skipped with the reason (defaults not built,
    and those too big to embed); and the page's list of the latter (name, reason, where to see
    it instead).

    A variant named explicitly must be built (ExplorerTablesMissing otherwise)."""
    payloads: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    omitted: list[dict[str, str]] = []
    for name in names:
        rules = built_rules(data_dir, name)
        if rules is None:
            if explicit:
                raise ExplorerTablesMissing(
                    f"{name} is not built in {data_dir}: run "
                    f"`stb-pipeline build --variant {name} --data-dir {data_dir}` first"
                )
            skipped.append((name, f"not built (stb-pipeline build --variant {name})"))
            continue
        if progress is not None:
            progress(f"reading {name}")
        try:
            payload = payload_of(data_dir, name, check_rules(name, rules))
            size = size_of(payload)
        except TooBig as big:
            payload, size = {}, big.size
        if size > MAX_VARIANT_BYTES:
            why = TOO_BIG.format(mb=size / 1e6, limit=MAX_VARIANT_BYTES / 1e6)
            instead = ELSEWHERE.format(name=name)
            skipped.append((name, f"{why}; {instead}"))
            omitted.append({"name": name, "reason": why, "instead": instead})
            continue
        payloads.append(payload)
    if not payloads:
        if omitted:
            raise UsageError(
                f"{', '.join(o['name'] for o in omitted)}: {omitted[0]['reason']}; "
                f"{omitted[0]['instead']}"
            )
        raise ExplorerTablesMissing(
            f"none of the explorer's variants is built in {data_dir}: run "
            f"`stb-pipeline build --variant {','.join(ONE_PLAYER_VARIANTS)} --data-dir {data_dir}`"
        )
    return payloads, skipped, omitted


def template() -> str:
    """The page template (package data: pipeline/templates/explorer.html)."""
    return resources.files("pipeline").joinpath("templates", DEFAULT_NAME).read_text("utf-8")


def render(payloads: list[dict[str, Any]], omitted: list[dict[str, str]] | None = None) -> str:
    """The page with the payloads embedded as JSON inside its script (and the variants too big
    to embed, listed on the page with where to see them, when there are any)."""
    found: dict[str, Any] = {"variants": payloads}
    if omitted:
        found["omitted"] = omitted
    data = json.dumps(found, separators=(",", ":"), allow_nan=False)
    # "</script" or "<!--" in a string would upset the HTML parser; "<" only occurs inside JSON
    # strings, where the escape \u003c means the same
    data = data.replace("<", "\\u003c")
    page = template()
    if page.count(DATA_MARK) != 1:
        raise PipelineError(f"the explorer template lacks its data mark {DATA_MARK!r}")
    return page.replace(DATA_MARK, data)


def embedded_data(page: str) -> dict[str, Any]:
    """The JSON a written page embeds (the inverse of :func:`render`; tests read it back)."""
    head, tail = template().split(DATA_MARK)
    if not (page.startswith(head) and page.endswith(tail)):
        raise UsageError("not an explorer page written by this version")
    return json.loads(page[len(head) : len(page) - len(tail)])


def check_output(path: Path, data_dir: Path, force: bool) -> None:
    """Refuse (UsageError) to replace an existing file outside the data directory without
    ``force``: the data directory holds generated files only, anywhere else may be the user's."""
    if path.is_dir():
        raise UsageError(f"{path} is a directory; give a file name with -o")
    if not path.exists() or force:
        return
    inside = path.resolve().parent.is_relative_to(data_dir.resolve())
    if not inside:
        raise UsageError(f"{path} exists and is outside {data_dir}; use --force to replace it")


def write_explorer(
    data_dir: Path,
    output: Path | None = None,
    names: list[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> ExplorerPage:
    """Write the explorer page for ``names`` (default: every built one of
    :data:`DEFAULT_VARIANTS`) to ``output`` (default ``data_dir/explorer.html``), atomically.
    A variant too big to embed is listed on the page and in :attr:`ExplorerPage.skipped`."""
    path = Path(output) if output is not None else data_dir / DEFAULT_NAME
    check_output(path, data_dir, force)
    chosen, explicit = pick_names(names or [])
    payloads, skipped, omitted = collect(data_dir, chosen, explicit, progress)
    page = render(payloads, omitted).encode("utf-8")
    if progress is not None:
        progress(f"writing {path}")
    make_dir(path.parent)
    tables.write_bytes_atomic(path, page)
    return ExplorerPage(path, [p["name"] for p in payloads], len(page), skipped)


def delayed_progress(report: Progress, after: float = PROGRESS_AFTER) -> Progress:
    """A progress callback that stays quiet for the first ``after`` seconds (a fast run prints
    nothing), then passes each step on."""
    start = time.monotonic()

    def step(message: str) -> None:
        if time.monotonic() - start >= after:
            report(message)

    return step
