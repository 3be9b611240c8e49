"""The explorer page: one self-contained HTML file to look up any position of the small
one-player Shut the Box variants and of the N-player games (its value, every player's share, and
every legal move ranked with its regret).

The library's answers (:mod:`pipeline.answer`, what `move` and `serve` say) are embedded as JSON,
one object per variant, with arrays indexed by state id (the bitmask of open tiles), so the page
needs no server and no network:

``value[s]``
    ``states.value``: the value of state ``s`` under optimal play.
``dice[s]``, ``choice[s]``
    ``states.dice`` (the optimal number of dice, 0 when terminal) and ``states.choice_options``
    (2 where the player may roll one die or ``rules.dice``).
``end[s]``
    the final value when no move is legal in ``s`` (the library's stuck roll; null when ``s``
    is never stuck).
``moves[s]``
    ``[[roll, mask, mask, ...], ...]``: the legal moves of each roll with a legal move, as
    bitmasks of the tiles shut; the tie rule's pick first, the others the larger mask first.
    The page ranks them as `stb-pipeline move` does: least regret first, the pick first among
    equal regrets (then the larger mask).
``rolls``
    ``{dice: [[roll, prob], ...]}``: the totals of every number of dice rolled.

A move's value is not stored: it is ``value[s & ~mask]``, the value of the state it leads to,
and its regret what it loses against the best value of the roll, as the library computes them
(:mod:`pipeline.solve.tolerance`; the page's script repeats the regret, as it runs offline, but
takes every pick from the library: it decides no tie);
the tests check the page's ranking against `move` and the tables. So the page stays small
(twelve tiles: 66,048 moves in well under a megabyte).

An N-player variant (``"kind": "players"``; see :func:`nplayer_payload`) is one such box per
block (a seat facing the best score so far, held by some players): the legal moves, dice and
rolls of a mask are the same in every block, so they are stored once, and each block adds every
player's share of each mask (``states.share_*``) and the mover's value when stuck. A variant
whose data would pass :data:`MAX_VARIANT_BYTES` is listed on the page as too big (browse it
with `stb-pipeline serve`) instead of embedded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.answer.answers import Answers, for_dir
from pipeline.errors import PipelineError, TableError, TablesMissingError, UsageError
from pipeline.games.dice import roll_distribution
from pipeline.games.registry import REGISTRY, Variant, get_variant, lookup, variant_from_rules
from pipeline.solve.tolerance import picks
from pipeline.store import directory
from pipeline.store.outputs import check_output, resolved, write_output

#: The most JSON one variant may embed: four players (259 blocks of 512 masks, every player's
#: share of each) take about 6 MB; the stake game's digital scores make 395 blocks of long
#: numbers, which a page should not carry (browse it with `stb-pipeline serve`).
MAX_VARIANT_BYTES = 8_000_000
#: Why a variant is listed but not embedded, and where to see it instead.
TOO_BIG = "too big to embed ({mb:.1f} MB of data; the page takes {limit:.0f} MB a variant)"
ELSEWHERE = "browse it with `stb-pipeline serve`, or ask `stb-pipeline move --variant {name}`"
#: Why a default variant is not on the page.
NOT_BUILT = "not built"
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
    """Variants left out, each with the reason: one too big to embed (listed on the page
    too)."""
    unbuilt: list[str] = field(default_factory=list)
    """The default variants not built (so not on the page)."""
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """Variants built in the data directory that the page cannot draw, each with why."""


Progress = Callable[[str], None]


def default_variants() -> list[str]:
    """The variants the page offers by default (those built): every registered variant it
    draws (a row of tiles, :attr:`Variant.view`), one player first (twelve tiles is the
    largest: 4,096 states, about 0.5 MB of the page), then players in turn (those stored in
    files of their own are built by name, so they are often absent)."""
    return [v.name for v in sorted(REGISTRY.values(), key=lambda v: v.players) if drawn(v)]


def pick_names(
    names: list[str], built: Mapping[str, Variant] | None = None
) -> tuple[list[str], bool]:
    """The variants asked for (comma-separated or repeated; ``all`` or none: the defaults and
    the custom variants of ``built`` the page draws), and whether they were named explicitly
    (then each must be built). UsageError for a variant that is not Shut the Box, for one
    player or for N (the page draws one row of tiles)."""
    built = built or {}
    customs = [n for n, v in sorted(built.items()) if n not in REGISTRY and why_not(v) is None]
    flat = [part for name in names for part in name.split(",") if part]
    if not flat or flat == ["all"]:
        return [*default_variants(), *customs], False
    chosen: list[str] = []
    for part in flat:
        chosen += [*default_variants(), *customs] if part == "all" else [lookup(part, built).name]
    for name in chosen:
        if not drawn(lookup(name, built)):
            raise UsageError(
                f"the explorer shows Shut the Box variants, not {name} "
                f"(try: {', '.join(default_variants())})"
            )
    return list(dict.fromkeys(chosen)), True


def drawn(variant: Variant) -> bool:
    """Whether the page draws ``variant``'s positions: one row of tiles (its family says so,
    :attr:`Variant.view`), one player or N."""
    return variant.view == "tiles"


def why_not(variant: Variant) -> str | None:
    """Why the page leaves ``variant`` out (None: it does not)."""
    if not drawn(variant):
        return "the page draws one row of Shut the Box tiles; `stb-pipeline serve` shows it"
    tiles = int(variant.make().rules().get("tiles", 0))
    if tiles > MAX_TILES:
        return f"{tiles} tiles, the page takes at most {MAX_TILES}; `stb-pipeline serve` shows it"
    return None


def left_out(data_dir: Path, chosen: list[str]) -> list[tuple[str, str]]:
    """The variants built in ``data_dir`` that are not among ``chosen`` because the page
    cannot take them, each with why (said, so that none goes missing without a word)."""
    entries = directory.of(data_dir).snapshot().entries
    others = sorted(n for n, e in entries.items() if e.built and n not in chosen)
    return [(n, why) for n in others if (why := why_not(entries[n].variant)) is not None]


def check_rules(variant: Variant, rules: dict[str, Any] | None) -> dict[str, Any]:
    """The variant's rules from the tables' metadata; UsageError when the page cannot show it."""
    name = variant.name
    if rules is None or not drawn(variant):
        kind = "not built" if rules is None else f"a {rules.get('game', 'different')} game"
        raise UsageError(
            f"the explorer shows Shut the Box variants; {name} is {kind} "
            f"(try: {', '.join(default_variants())})"
        )
    if rules["tiles"] > MAX_TILES:
        raise UsageError(
            f"{name} has {rules['tiles']} tiles; the explorer takes at most {MAX_TILES}"
        )
    return rules


def built_rules(data_dir: Path, name: str, variant: Variant | None = None) -> dict[str, Any] | None:
    """The rules ``name`` (``variant``: a custom one) was built with, or None when a table the
    page reads lacks it (in the shared file or the variant's own, ``variants/<name>/``)."""
    entry = directory.of(data_dir).snapshot().entries.get(name)
    if entry is not None and entry.damaged:
        raise TableError(entry.damaged)
    needed: tuple[str, ...] = ("states", "policy", "moves")
    if (variant or get_variant(name)).players <= 1:  # players in turn have no edges table
        needed += ("edges",)
    return entry.rules if entry is not None and entry.holds(needed) else None


def variant_payload(answers: Answers, variant: Variant, rules: dict[str, Any]) -> dict[str, Any]:
    """Everything the page needs about one one-player variant (see the module docstring), from
    the library's answers: each state's value and dice, and each roll's legal moves with the
    tie rule's pick first."""
    n_states = 1 << rules["tiles"]
    arrays = answers.arrays(variant)
    if arrays["state_id"].tolist() != list(range(n_states)):
        raise TableError(
            f"states of {variant.name} are not the 2**{rules['tiles']} boxes; rebuild it"
        )
    moves, end, dice_used = _moves_and_ends(answers, variant, range(n_states))
    first = answers.expect(variant, state_id=n_states - 1)
    return {
        "name": variant.name,
        "description": variant.description,
        "rules": rules,
        "value": arrays["value"].tolist(),
        "dice": arrays["dice"].astype(int).tolist(),
        "choice": arrays["choice_options"].astype(int).tolist(),
        "maximise": first.maximise,
        "end": end,
        "moves": moves,
        "rolls": _rolls(dice_used, rules["sides"]),
    }


def _moves_and_ends(
    answers: Answers, variant: Variant, states: range, pick_first: bool = True
) -> tuple[list[list[list[int]]], list[float | None], set[int]]:
    """For each state: ``[[roll, mask, mask, ...], ...]`` (each roll with a legal move: the
    library's pick first, unless not ``pick_first``, then by the tie rule, the larger mask
    first), the value when a roll leaves no legal move (None: never), and the numbers of dice
    rolled anywhere."""
    moves: list[list[list[int]]] = []
    end: list[float | None] = []
    dice_used: set[int] = set()
    for s in states:
        found, by_roll = answers.every_roll(variant, s)
        dice_used.update(d.dice for d in found.dice)
        rows = []
        for r in found.rolls:
            if r.kind == "move":
                ranked = by_roll[r.roll]
                if pick_first:
                    pick = next(m.label for m in ranked if m.best)
                    others = sorted((m.label for m in ranked if not m.best), reverse=True)
                    rows.append([r.roll, pick, *others])
                else:
                    rows.append([r.roll, *sorted((m.label for m in ranked), reverse=True)])
        moves.append(rows)
        stuck = [r.value for r in found.rolls if r.kind != "move"]
        end.append(stuck[0] if stuck else None)
    return moves, end, dice_used


def _rolls(dice_used: set[int], sides: int) -> dict[str, list[list[float]]]:
    """``{dice: [[roll, prob], ...]}``: the totals each number of dice rolled can make."""
    return {
        str(d): [[t, ways / denom] for t, ways, denom in roll_distribution(d, sides)]
        for d in sorted(dice_used)
    }


def nplayer_payload(answers: Answers, variant: Variant, rules: dict[str, Any]) -> dict[str, Any]:
    """Everything the page needs about one N-player variant, from the library's answers.

    ``scores[mask]`` each box's score; ``possible`` the scores a turn can end with (the best
    scores a later seat can face); ``dice[mask]``, ``moves[mask]`` (the larger mask first: the
    page takes the first of each block's best value, unless ``picks`` says otherwise) and
    ``rolls`` as for one player, the same in every block (player 1's);
    ``blocks["seat/best/count"]`` (``1/0/0`` for player 1) with ``shares`` (``holder``: each
    earlier player holding the best score, ``beaten``: each earlier player beaten, ``"k"``:
    player k after the mover, ``value``: the mover's (``states.value``); arrays by mask, the
    states table's columns) and ``end`` (the mover's value when a roll leaves no move, by the
    score's place in ``possible``; null where the block is never stuck with that score);
    ``picks``: ``[block key, mask, roll, move]`` where the library's pick is not the page's
    plain one (:func:`_library_picks`)."""
    tiles, n = rules["tiles"], rules["players"]
    full = (1 << tiles) - 1
    game = answers.game(variant)
    arrays = answers.arrays(variant)
    ids = arrays["state_id"]
    blocks_of = ids >> tiles
    numbers, counts = np.unique(blocks_of, return_counts=True)
    if (counts != 1 << tiles).any():
        raise TableError(
            f"states of {variant.name} are not whole blocks of 2**{tiles} boxes; rebuild it"
        )
    if (arrays["choice_options"] > 1).any():
        raise UsageError(
            f"{variant.name} lets the mover choose the number of dice; the explorer shows "
            "N-player variants whose rules set the dice"
        )
    keys, blocks = _block_shares(game, arrays, numbers, tiles, n)
    # the shares are most of the data: a variant too big stops here, before its moves are asked
    if (size := size_of(blocks)) > MAX_VARIANT_BYTES:
        raise TooBig(size)
    # player 1's moves, the same in every block: the page picks each block's with the tie rule
    moves, _, dice_used = _moves_and_ends(answers, variant, range(full + 1), pick_first=False)
    scores = game.mask_scores
    possible = game.possible_scores.tolist()
    _stuck_values(answers, variant, blocks, keys, arrays["terminal"], scores, possible, tiles)
    return {
        "name": variant.name,
        "kind": "players",
        "description": variant.description,
        "rules": rules,
        "players": n,
        "scores": scores.tolist(),
        "possible": possible,
        "dice": arrays["dice"][: full + 1].astype(int).tolist(),
        "moves": moves,
        "rolls": _rolls(dice_used, rules["sides"]),
        "blocks": blocks,
        "picks": _library_picks(
            moves, {keys[b]: k for k, b in enumerate(numbers.tolist())}, arrays["value"], tiles
        ),
    }


def _block_shares(
    game: Any, arrays: dict[str, np.ndarray], numbers: np.ndarray, tiles: int, n: int
) -> tuple[dict[int, str], dict[str, dict[str, Any]]]:
    """Each block's key (``seat/best/count``) by block number, and its shares by mask."""
    fields = game.position_fields(numbers << tiles)
    blocks: dict[str, dict[str, Any]] = {}
    keys: dict[int, str] = {}
    for k, block in enumerate(numbers.tolist()):
        seat, best, count = (int(fields[f][k]) for f in ("player", "best_score", "best_count"))
        keys[block] = f"{seat}/{best}/{count}"
        rows = slice(k << tiles, (k + 1) << tiles)
        # the mover's own share is ``value`` (the moves' values come from it)
        shares: dict[str, list[float | None]] = {"value": arrays["value"][rows].tolist()}
        if seat > 1:
            shares["holder"] = _nulls(arrays["share_holder"][rows])
        if seat - 1 > count:
            shares["beaten"] = _nulls(arrays["share_beaten"][rows])
        for j in range(seat + 1, n + 1):
            shares[str(j)] = _nulls(arrays[f"share_{j}"][rows])
        blocks[keys[block]] = {"shares": shares}
    return keys, blocks


def _stuck_values(
    answers: Answers, variant: Variant, blocks: dict[str, dict[str, Any]],
    keys: dict[int, str], terminal: np.ndarray, scores: np.ndarray, possible: list[int],
    tiles: int,
) -> None:  # fmt: skip
    """Each block's ``end``: the mover's value of a stuck roll by the score's place in
    ``possible`` (a mask of each score; a last seat already below the best score has won:
    never stuck, null)."""
    for block_data in blocks.values():
        block_data["end"] = [None] * len(possible)
    mask_of = {int(score): mask for mask, score in enumerate(scores.tolist()) if mask}
    asked = [
        (keys[block], at, (block << tiles) | mask_of[score])
        for k, block in enumerate(keys)
        for at, score in enumerate(possible)
        if not terminal[(k << tiles) | mask_of[score]]
    ]
    for (where, at, _), (_, _, value) in zip(
        asked, answers.stuck(variant, [s for _, _, s in asked]), strict=True
    ):
        blocks[where]["end"][at] = value


def _library_picks(
    moves: list[list[list[int]]], blocks: dict[str, int], value: np.ndarray, tiles: int
) -> list[list[Any]]:
    """``[block key, mask, roll, move]`` wherever the library's tie rule
    (:func:`pipeline.solve.tolerance.picks`) picks another move than the page's plain rule, the
    first move (the larger mask first) of exactly the best value: the page decides no tie."""
    nodes = [(mask, row[0], row[1:]) for mask, rows in enumerate(moves) for row in rows]
    if not nodes:
        return []
    width = max(len(m) for _, _, m in nodes)
    masks = np.array([mask for mask, _, _ in nodes], dtype=np.int64)
    shut = np.array([[*m, *[-1] * (width - len(m))] for _, _, m in nodes], dtype=np.int64)
    out: list[list[Any]] = []
    for key, k in blocks.items():
        block = value[k << tiles : (k + 1) << tiles]
        vals = np.where(shut >= 0, block[masks[:, None] & ~shut], np.nan)
        best = np.nanmax(vals, axis=1)
        library = picks(vals, shut, best)
        plain = (vals == best[:, None]).argmax(axis=1)
        for n in np.flatnonzero(library != plain).tolist():
            out.append([key, int(masks[n]), nodes[n][1], int(shut[n, library[n]])])
    return out


def _nulls(values: np.ndarray) -> list[float | None]:
    """A float column as a list, NaN (null in the table) as None."""
    return [None if v != v else v for v in values.tolist()]


class TooBig(Exception):
    """A variant's data would pass :data:`MAX_VARIANT_BYTES` (``size``: at least this many)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def payload_of(data_dir: Path, name: str, rules: dict[str, Any]) -> dict[str, Any]:
    """The payload of a one-player or an N-player variant."""
    answers = for_dir(data_dir)
    variant = REGISTRY.get(name) or variant_from_rules(name, rules) or get_variant(name)
    if variant.players > 1:
        return nplayer_payload(answers, variant, rules)
    return variant_payload(answers, variant, rules)


def size_of(payload: Any) -> int:
    """Bytes of JSON the payload adds to the page."""
    return len(json.dumps(payload, separators=(",", ":"), allow_nan=False))


def collect(
    data_dir: Path,
    names: list[str],
    explicit: bool,
    progress: Progress | None = None,
    built: Mapping[str, Variant] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[dict[str, str]]]:
    """The payload of each variant (``built``: the custom variants among them); the variants
    skipped with the reason (defaults not built: "not built", and those too big to embed); and
    the page's list of the latter (name, reason, where to see it instead).

    A variant named explicitly must be built (ExplorerTablesMissing otherwise)."""
    payloads: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    omitted: list[dict[str, str]] = []
    for name in names:
        variant = lookup(name, built or {})
        rules = built_rules(data_dir, name, variant)
        if rules is None:
            if explicit:
                raise ExplorerTablesMissing(
                    f"{name} is not built in {data_dir}: run "
                    f"`stb-pipeline build --variant {name} --data-dir {data_dir}` first"
                )
            skipped.append((name, NOT_BUILT))
            continue
        if progress is not None:
            progress(f"reading {name}")
        try:
            checked = check_rules(variant, rules)
        except UsageError as exc:
            if explicit:
                raise
            skipped.append((name, str(exc)))  # a custom box too big for the page, say
            continue
        try:
            payload = payload_of(data_dir, name, checked)
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
        one_player = ",".join(n for n in default_variants() if REGISTRY[n].players == 1)
        raise ExplorerTablesMissing(
            f"none of the explorer's variants is built in {data_dir}: run "
            f"`stb-pipeline build --variant {one_player} --data-dir {data_dir}`"
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


def write_explorer(
    data_dir: Path,
    output: Path | None = None,
    names: list[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> ExplorerPage:
    """Write the explorer page for ``names`` (default: every built one of
    :func:`default_variants`) to ``output`` (default ``data_dir/explorer.html``), atomically.
    A variant too big to embed is listed on the page and in :attr:`ExplorerPage.skipped`."""
    path = Path(output) if output is not None else data_dir / DEFAULT_NAME
    # the one rule of every -o; the default page is the explorer's own, rewritten each run
    default = resolved(path) == resolved(data_dir / DEFAULT_NAME, "--data-dir")
    check_output(path, data_dir, force, replace=default)
    built = directory.of(data_dir).snapshot().customs()
    chosen, explicit = pick_names(names or [], built)
    payloads, skipped, omitted = collect(data_dir, chosen, explicit, progress, built)
    page = render(payloads, omitted).encode("utf-8")
    if progress is not None:
        progress(f"writing {path}")
    write_output(path, page)
    unbuilt = [name for name, why in skipped if why == NOT_BUILT]
    return ExplorerPage(
        path,
        [p["name"] for p in payloads],
        len(page),
        [(name, why) for name, why in skipped if why != NOT_BUILT],
        unbuilt,
        [] if explicit else left_out(data_dir, chosen),
    )


def delayed_progress(report: Progress, after: float = PROGRESS_AFTER) -> Progress:
    """A progress callback that stays quiet for the first ``after`` seconds (a fast run prints
    nothing), then passes each step on."""
    start = time.monotonic()

    def step(message: str) -> None:
        if time.monotonic() - start >= after:
            report(message)

    return step
