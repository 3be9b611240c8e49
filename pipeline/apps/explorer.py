"""The explorer page: one self-contained HTML file to look up any position of the small
one-player Shut the Box variants (its value, and every legal move ranked with its regret).

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
from pipeline.games.registry import get_variant
from pipeline.games.shutbox.game import ShutTheBox
from pipeline.store import tables
from pipeline.store.outputs import make_dir

#: The variants the page offers by default (those built): every registered one-player Shut the
#: Box variant. Twelve tiles is the largest (4,096 states, about 0.5 MB of the page).
DEFAULT_VARIANTS: tuple[str, ...] = (
    "classic",
    "classic-score",
    "lever",
    "one-die-6",
    "one-die-6-max2",
    "six-tiles-one-die",
    "digital-score",
    "twelve-tiles",
)
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
    """Default variants left out, each with the reason (not built)."""


Progress = Callable[[str], None]


def pick_names(names: list[str]) -> tuple[list[str], bool]:
    """The variants asked for (comma-separated or repeated; ``all`` or none: the defaults), and
    whether they were named explicitly (then each must be built). UsageError for a variant that
    is not one-player Shut the Box (the page draws one row of tiles)."""
    flat = [part for name in names for part in name.split(",") if part]
    if not flat or flat == ["all"]:
        return list(DEFAULT_VARIANTS), False
    chosen: list[str] = []
    for part in flat:
        chosen += DEFAULT_VARIANTS if part == "all" else [get_variant(part).name]
    for name in chosen:
        if not isinstance(get_variant(name).make(), ShutTheBox):
            raise UsageError(
                f"the explorer shows one-player Shut the Box variants, not {name} "
                f"(try: {', '.join(DEFAULT_VARIANTS)})"
            )
    return list(dict.fromkeys(chosen)), True


def check_rules(name: str, rules: dict[str, Any] | None) -> dict[str, Any]:
    """The variant's rules from the tables' metadata; UsageError when the page cannot show it."""
    if rules is None or rules.get("game") != "shut-the-box":
        kind = "not built" if rules is None else f"a {rules.get('game', 'different')} game"
        raise UsageError(
            f"the explorer shows one-player Shut the Box variants; {name} is {kind} "
            f"(try: {', '.join(DEFAULT_VARIANTS)})"
        )
    if rules["tiles"] > MAX_TILES:
        raise UsageError(
            f"{name} has {rules['tiles']} tiles; the explorer takes at most {MAX_TILES}"
        )
    return rules


def built_rules(data_dir: Path, name: str) -> dict[str, Any] | None:
    """The rules ``name`` was built with, or None when a table the page reads lacks it."""
    found: dict[str, Any] | None = None
    for table in ("states", "policy", "moves", "edges"):
        if not tables.table_path(data_dir, table).exists():
            return None
        try:
            rules = tables.table_rules(data_dir, table).get(name)
        except (OSError, ValueError) as exc:
            raise TableError(f"{tables.table_path(data_dir, table)} is unreadable: {exc}") from None
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


def collect(
    data_dir: Path, names: list[str], explicit: bool, progress: Progress | None = None
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The payload of each variant, and the defaults skipped because they are not built.

    A variant named explicitly must be built (ExplorerTablesMissing otherwise)."""
    payloads: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for name in names:
        rules = built_rules(data_dir, name)
        if rules is None:
            if explicit:
                raise ExplorerTablesMissing(
                    f"{name} is not built in {data_dir}: run "
                    f"`stb-pipeline build --variant {name} --data-dir {data_dir}` first"
                )
            skipped.append((name, "not built"))
            continue
        if progress is not None:
            progress(f"reading {name}")
        payloads.append(variant_payload(data_dir, name, check_rules(name, rules)))
    if not payloads:
        raise ExplorerTablesMissing(
            f"none of the explorer's variants is built in {data_dir}: run "
            f"`stb-pipeline build --variant {','.join(DEFAULT_VARIANTS)} --data-dir {data_dir}`"
        )
    return payloads, skipped


def template() -> str:
    """The page template (package data: pipeline/templates/explorer.html)."""
    return resources.files("pipeline").joinpath("templates", DEFAULT_NAME).read_text("utf-8")


def render(payloads: list[dict[str, Any]]) -> str:
    """The page with the payloads embedded as JSON inside its script."""
    data = json.dumps({"variants": payloads}, separators=(",", ":"), allow_nan=False)
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
    :data:`DEFAULT_VARIANTS`) to ``output`` (default ``data_dir/explorer.html``), atomically."""
    path = Path(output) if output is not None else data_dir / DEFAULT_NAME
    check_output(path, data_dir, force)
    chosen, explicit = pick_names(names or [])
    payloads, skipped = collect(data_dir, chosen, explicit, progress)
    page = render(payloads).encode("utf-8")
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
