"""The rules of a Double Shutter box as data, and its positions as the user writes them.

Kept apart from the game (game.py: the graph, numpy), so that a position is read into its state
id with the standard library alone: the game's ``parse_state`` and the console script's one-shot
`expect` (:mod:`pipeline.cli.lean`, through :attr:`pipeline.games.registry.Variant.parser`) both
read it here, the one place the text of a state is read.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.errors import UsageError
from pipeline.games.dice import DiceRules, range_problem, target_problems
from pipeline.games.tiles import refuse_position

MAX_COLUMNS = 9
MAX_DICE = 4
MAX_SIDES = 12
OBJECTIVES = ("score", "shut", "target")
ONE_DIE_MODES = ("never", "optional", "forced")
FRONT_BACK = re.compile(r"^\s*(?:(front|back|f|b)\s*[=:]\s*([0-9]*|-)\s*[,;]?\s*)+$", re.I)
FRONT_BACK_PART = re.compile(r"(front|back|f|b)\s*[=:]\s*([0-9]*|-)", re.I)


@dataclass(frozen=True)
class DoubleShutterRules(DiceRules):
    """The rules of a Double Shutter box (defaults: the box of the Double Shutter article).

    ``one_die``: ``optional`` (may) or ``forced`` (must) roll a single die when the tiles that can
    currently be shut sum to at most ``one_die_sum``; ``never`` ignores the limit. The objective
    is ``score`` (minimise the expected final score), ``shut`` (maximise P(final score = 0)) or
    ``target`` (maximise P(final score <= target)).
    """

    columns: int = 9
    back_row: bool = True
    back_reversed: bool = True
    front_weight: int = 2
    back_weight: int = 1
    dice: int = 2
    sides: int = 6
    one_die: str = "optional"
    one_die_sum: int = 6
    objective: str = "score"
    target: int | None = None

    def problems(self) -> list[str]:
        """Every reason this rule set is contradictory or out of range (empty when valid)."""
        out: list[str] = []
        out += range_problem("columns", self.columns, 1, MAX_COLUMNS)
        out += self.dice_rule_problems(MAX_DICE, MAX_SIDES, ONE_DIE_MODES, OBJECTIVES)
        if self.front_weight < 0 or self.back_weight < 0:
            out.append("score weights must not be negative")
        if self.one_die_sum < 1:
            out.append(f"the one-die limit must be positive, not {self.one_die_sum}")
        if out:
            return out
        if self.one_die != "never" and self.dice == 1:
            out.append("a one-die rule needs more than one die")
        out += target_problems(self.objective, self.target, self.max_score())
        if self.objective == "shut" and self.columns > self.dice * self.sides:
            out.append(f"tile {self.columns} can never be shut, so P(score = 0) would be 0")
        return out

    @property
    def rows(self) -> int:
        """Tiles per column."""
        return 2 if self.back_row else 1

    def front_tiles(self) -> list[int]:
        """Face value of the front tile of each column (column 1 first)."""
        return list(range(1, self.columns + 1))

    def back_tiles(self) -> list[int]:
        """Face value of the back tile of each column (column 1 first)."""
        front = self.front_tiles()
        return front[::-1] if self.back_reversed else front

    def places(self) -> list[int]:
        """Base-3 place value of each column's digit (column 1 most significant)."""
        return [3**k for k in range(self.columns - 1, -1, -1)]

    def max_score(self) -> int:
        """Score with every tile standing."""
        total = self.columns * (self.columns + 1) // 2
        return total * (self.front_weight + (self.back_weight if self.back_row else 0))

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for metadata and manifests."""
        return {"game": "double-shutter", **asdict(self)}

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of a state written as its digit string ("000000000", column 1 first) or as
        the tiles standing ("front=123456789 back=123456789", "-" for none)."""
        refuse_position(extra)
        raw = text.strip()
        n, rows = self.columns, self.rows
        if raw.isdigit() and raw.isascii():
            if len(raw) != n or any(int(ch) > rows for ch in raw):
                raise UsageError(
                    f"state {text!r}: give {n} digits 0-{rows}, one per column, column 1 first "
                    f"(tiles down in the column), or front=... back=... (see --help)"
                )
            return int(sum(int(ch) * int(p) for ch, p in zip(raw, self.places(), strict=True)))
        if not FRONT_BACK.match(raw):
            raise UsageError(
                f"state {text!r} is not a Double Shutter state: write {n} digits 0-{rows} "
                f"(e.g. {'0' * n}) or the standing tiles, e.g. front=1234 back=98 (- for none)"
            )
        found: dict[str, set[int]] = {}
        for key, value in FRONT_BACK_PART.findall(raw):
            row = "front" if key.lower().startswith("f") else "back"
            if row in found:
                raise UsageError(f"state {text!r}: the {row} row is given twice")
            found[row] = self._parse_row(text, row, value)
        if not self.back_row:
            found.setdefault("back", set())
            if found["back"]:
                raise UsageError(f"state {text!r}: this box has no back row")
        if set(found) != {"front", "back"}:
            raise UsageError(f"state {text!r}: give both rows, e.g. front=1234 back=98")
        return self._id_from_rows(text, found["front"], found["back"])

    def _parse_row(self, text: str, row: str, value: str) -> set[int]:
        """Tiles of one row written as digits ('-' or nothing for none)."""
        tiles: set[int] = set()
        for ch in "" if value == "-" else value:
            t = int(ch)
            if not 1 <= t <= self.columns:
                raise UsageError(f"state {text!r}: {row} tile {t} is not in this box")
            if t in tiles:
                raise UsageError(f"state {text!r}: {row} tile {t} is listed twice")
            tiles.add(t)
        return tiles

    def _id_from_rows(self, text: str, front: set[int], back: set[int]) -> int:
        """State id of the given standing front and back tiles; UsageError if impossible."""
        state = 0
        tiles = zip(self.front_tiles(), self.back_tiles(), self.places(), strict=True)
        for f, b, place in tiles:
            if f in front and self.back_row and b not in back:
                raise UsageError(
                    f"state {text!r}: front tile {f} stands, so back tile {b} behind it "
                    "cannot be down"
                )
            digit = 0 if f in front else (1 if b in back and self.back_row else self.rows)
            state += digit * place
        return state
