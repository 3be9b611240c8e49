"""The course assignment's verifier file: writing it from the solved tables, and checking someone
else's.

A verifier file has one line per state: the open tiles increasing without separators (separated
by spaces above 9 tiles), P1's score for P2 states only, then the mover's expected wins, all
comma-separated. Every line must come after the lines of all the state's nonterminal successors
(for a P1 state that can get stuck with open sum s, that includes P2's full box against score s).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.analysis import sql
from pipeline.apps.course.formats import DEFAULT_TOLERANCE, EXIT_BAD_FILE  # noqa: F401
from pipeline.errors import UsageError
from pipeline.games.nplayer.game import NPlayer as TwoPlayer
from pipeline.games.nplayer.rules import course_rules
from pipeline.games.registry import Variant, get_variant
from pipeline.games.solved import Solved
from pipeline.games.tiles import parse_tiles
from pipeline.graph import group_starts
from pipeline.stages import frames as stages
from pipeline.store import tables


def two_player_game(variant: Variant) -> TwoPlayer:
    """The variant's game, which must be a two-player one."""
    game = variant.make()
    if not isinstance(game, TwoPlayer) or game.n != 2:
        raise UsageError(f"variant {variant.name} is not a two-player game: no verifier format")
    return game


def export_lines(data_dir: Path, variant: Variant) -> list[str]:
    """The verifier file's lines for a built two-player variant, in file order."""
    two_player_game(variant)
    tables.read_table(data_dir, "states", variant.name)  # a clear error when not built
    rows = sql.run_query("verifier_export", data_dir, variant=variant.name).sort("line_no")
    return rows["line"].to_list()


@dataclass(frozen=True)
class Problem:
    """One wrong line of a verifier file."""

    line: int
    """1-based line number."""
    kind: str
    """"bad format", "unknown state", "missing successor" or "incorrect value"."""
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class CheckReport:
    """What checking a verifier file found."""

    lines: int
    problems: list[Problem]
    """Every wrong line (the first problem of each), in line order."""

    @property
    def ok(self) -> bool:
        """True when every line is right."""
        return not self.problems


class LineError(Exception):
    """A line that names no state: ``kind`` is "bad format" or "unknown state"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse_line(game: TwoPlayer, text: str) -> tuple[int, float]:
    """State id and value of one line; LineError saying what is wrong with it otherwise.

    Empty tiles name the shut box (terminal: P1 has won, or P2 has won against any score).
    """
    fields = text.split(",")
    if len(fields) not in (2, 3):
        raise LineError("bad format", f"expected TILES,VALUE or TILES,P1SCORE,VALUE, got {text!r}")
    if len(fields) == 3 and not fields[1].strip().isdigit():
        raise LineError("bad format", f"player 1's score {fields[1]!r} is not a number")
    try:
        value = float(fields[-1])
    except ValueError:
        raise LineError("bad format", f"value {fields[-1]!r} is not a number") from None
    if not math.isfinite(value):
        raise LineError("bad format", f"value {fields[-1]!r} is not a finite number")
    tiles = fields[0].strip()
    if game.r.box.tiles > 9 and tiles:
        # tiles are space-separated; a trailing comma keeps a lone "10" from reading as 1, 0
        tiles = ",".join(tiles.split()) + ","
    try:
        mask = parse_tiles(tiles, game.r.box.tiles) if tiles else 0
    except UsageError as exc:
        raise LineError("bad format", str(exc)) from None
    if len(fields) == 2:
        return mask, value
    score = int(fields[1])
    try:
        game.r.check_p1_score(score)
    except UsageError as exc:
        raise LineError("unknown state", str(exc)) from None
    return game.state_id(mask, score), value


def check_lines(
    lines: list[str],
    game: TwoPlayer,
    states: pl.DataFrame,
    edges: pl.DataFrame,
    tolerance: float = DEFAULT_TOLERANCE,
) -> CheckReport:
    """Check a verifier file's lines against a variant's solved states and edges tables."""
    ids = states["state_id"].to_numpy()
    order = np.argsort(ids)
    ids = ids[order]
    value = states["value"].to_numpy()[order]
    terminal = states["terminal"].to_numpy()[order]
    problems: dict[int, Problem] = {}
    line_state = np.full(len(lines), -1, dtype=np.int64)
    line_value = np.full(len(lines), np.nan)
    for i, text in enumerate(lines):
        if not text.strip():
            continue  # blank lines carry no state
        try:
            state_id, line_value[i] = parse_line(game, text.strip())
        except LineError as exc:
            problems[i] = Problem(i + 1, exc.kind, str(exc))
            continue
        k = int(np.searchsorted(ids, state_id))
        if k == ids.shape[0] or ids[k] != state_id:
            problems[i] = Problem(i + 1, "unknown state", f"{text.strip()!r} is not a state")
            continue
        line_state[i] = k
    _check_values(lines, line_state, line_value, value, tolerance, problems)
    _check_order(lines, line_state, ids, terminal, edges, game, problems)
    return CheckReport(len(lines), [problems[i] for i in sorted(problems)])


def _check_values(
    lines: list[str],
    line_state: np.ndarray,
    line_value: np.ndarray,
    value: np.ndarray,
    tolerance: float,
    problems: dict[int, Problem],
) -> None:
    """Record lines whose value is not within ``tolerance`` (relative) of the tables'."""
    ok = line_state >= 0
    expected = np.where(ok, value[np.maximum(line_state, 0)], np.nan)
    wrong = ok & (np.abs(line_value - expected) > tolerance * np.maximum(1.0, np.abs(expected)))
    for i in np.flatnonzero(wrong).tolist():
        detail = f"{lines[i].strip()!r}: the value is {float(expected[i])!r}"
        problems.setdefault(i, Problem(i + 1, "incorrect value", detail))


def _check_order(
    lines: list[str],
    line_state: np.ndarray,
    ids: np.ndarray,
    terminal: np.ndarray,
    edges: pl.DataFrame,
    game: TwoPlayer,
    problems: dict[int, Problem],
) -> None:
    """Record lines written before one of their state's nonterminal successors."""
    first_line = np.full(ids.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    listed = np.flatnonzero(line_state >= 0)
    # earliest line of each state: assign in reverse so the first occurrence wins
    first_line[line_state[listed[::-1]]] = listed[::-1]
    pairs = edges.filter(pl.col("next_state_id").is_not_null()).select("state_id", "next_state_id")
    src = np.searchsorted(ids, pairs["state_id"].to_numpy())
    dst = np.searchsorted(ids, pairs["next_state_id"].to_numpy())
    live = ~terminal[dst]
    src, dst = src[live], dst[live]
    late = (first_line[dst] >= first_line[src]) & (first_line[src] < np.iinfo(np.int64).max)
    src, dst = src[late], dst[late]
    # name the smallest missing successor of each late state (a state listed again later only
    # needs its successors before its first line)
    order = np.lexsort((ids[dst], src))
    src, dst = src[order], dst[order]
    first = group_starts(src)
    for k, missing in zip(src[first].tolist(), dst[first].tolist(), strict=True):
        i = int(first_line[k])
        detail = f"{lines[i].strip()!r} comes before its successor {describe(game, ids[missing])}"
        problems.setdefault(i, Problem(i + 1, "missing successor", detail))


def describe(game: TwoPlayer, state_id: int) -> str:
    """A state as a verifier line would name it: tiles, and P1's score for P2 states."""
    mask, score = game.split_ids(np.array([state_id]))
    tiles = game.state_text(int(mask[0]))
    return tiles if score[0] == 0 else f"{tiles},{int(score[0])}"


def check_file(
    path: Path, data_dir: Path, variant: Variant, tolerance: float = DEFAULT_TOLERANCE
) -> CheckReport:
    """Check the verifier file at ``path`` against the variant's tables in ``data_dir``.

    UsageError for a tolerance that is not a finite number in [0, 1): NaN or infinity would
    let every value pass.
    """
    check_tolerance(tolerance)
    game = two_player_game(variant)
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    states = tables.read_table(data_dir, "states", variant.name)
    edges = tables.read_table(data_dir, "edges", variant.name)
    if states["value"].is_null().any():
        raise UsageError(
            f"variant {variant.name} is enumerated but not solved: run "
            f"`stb-pipeline build --variant {variant.name}`"
        )
    return check_lines(text.splitlines(), game, states, edges, tolerance)


def check_tolerance(tolerance: float) -> None:
    """UsageError unless the relative tolerance is finite and in [0, 1)."""
    if not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        raise UsageError(f"--tolerance must be a number from 0 to below 1, not {tolerance}")


def pick_two_player(
    name: str, tiles: int | None, dice: int | None, sides: int | None, one_die_sum: int | None
) -> tuple[Variant, bool]:
    """The two-player variant asked for, and whether it comes from rule options (no tables)."""
    options = {"tiles": tiles, "dice": dice, "sides": sides, "one_die_sum": one_die_sum}
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return get_variant(name), False
    rules = course_rules(**given)
    named = get_variant(name)
    game = named.make()
    if isinstance(game, TwoPlayer) and game.rules() == rules.to_dict():
        return named, False  # the options just restate the named variant's rules
    return Variant(rules.slug(), "custom two-player rules", lambda: TwoPlayer(rules), False), True


@contextlib.contextmanager
def tables_for(variant: Variant, custom: bool, data_dir: Path) -> Iterator[Path]:
    """The data directory to read: the given one, or for custom rules a temporary one holding
    the variant's states and edges, solved on the spot."""
    if not custom:
        yield data_dir
        return
    game = two_player_game(variant)
    frames = stages.stage_frames(Solved(variant, game, game.graph()), ("edges", "solve"))
    with tempfile.TemporaryDirectory(prefix="stb-verifier-") as tmp:
        for name, frame in frames.items():
            if not isinstance(frame, pl.DataFrame):  # only policy rows come in chunks
                raise TypeError(f"{name} rows of {variant.name} came in chunks, not a frame")
            tables.replace_rows(
                Path(tmp), name, {variant.name: frame}, {variant.name: game.rules()}
            )
        yield Path(tmp)
