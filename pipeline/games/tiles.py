"""Writing and reading a set of open tiles: the state codec of the tile games (plain Python).

A set of open tiles is a bitmask, bit ``t - 1`` for tile ``t``. Users write it as digits
("1245", up to 9 tiles) or with separators ("1,2,10"). Kept free of numpy so that a lookup on
built tables (`stb-pipeline expect`) parses its argument without loading the game.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import UsageError


def parse_tiles(text: str, n_tiles: int) -> int:
    """Bitmask of open tiles written as digits ("1245") or with separators ("1,2,10").

    Raises UsageError with a one-line reason for anything else.
    """
    raw = text.strip()
    if not raw:
        raise UsageError(
            "no open tiles given: name the open tiles, e.g. 1245 (the shut box is over)"
        )
    if any(c in ", " for c in raw):
        tokens = [tok for tok in raw.replace(",", " ").split() if tok]
        if not tokens:  # "," or ", ,": separators only, not the shut box
            raise UsageError(f"tiles {text!r}: name the open tiles between the commas, e.g. 1,2,10")
    elif n_tiles > 9 and len(raw) > 1:
        raise UsageError(
            f"tiles {text!r} are ambiguous with {n_tiles} tiles: separate them, e.g. 1,2,10"
        )
    else:
        tokens = list(raw)
    mask = 0
    for tok in tokens:
        if not tok.isdigit() or not tok.isascii():
            raise UsageError(f"tiles {_short(text)}: {_short(tok)} is not a tile number")
        t = int(tok) if len(tok) < 10 else 10**9  # thousands of digits are beyond int()
        if not 1 <= t <= n_tiles:
            raise UsageError(
                f"tiles {_short(text)}: tile {_short(tok)[1:-1]} is not in this box "
                f"(tiles 1..{n_tiles})"
            )
        if mask >> (t - 1) & 1:
            raise UsageError(f"tiles {text!r}: tile {t} is listed twice")
        mask |= 1 << (t - 1)
    return mask


def _short(text: str) -> str:
    """``text`` quoted for a message, cut short when it is long."""
    return repr(text) if len(text) <= 30 else repr(text[:27] + "...")


#: The state parts only the N-player games take, as the command line names them.
POSITION_OPTIONS = {
    "player": "--player",
    "best_score": "--best-score",
    "best_count": "--best-count",
}


def position_extra(
    p1_score: int | None = None,
    player: int | None = None,
    best_score: int | None = None,
    best_count: int | None = None,
) -> dict[str, int]:
    """The parts of a state beyond the open tiles that were given (the N-player games' seat,
    best score so far and how many share it; the two-player game's ``p1_score``), for
    :meth:`TileCodec.parse` and the answers; one-player games take none."""
    given = {
        "p1_score": p1_score,
        "player": player,
        "best_score": best_score,
        "best_count": best_count,
    }
    return {k: v for k, v in given.items() if v is not None}


def refuse_position(extra: dict[str, Any]) -> None:
    """UsageError when a one-player game is given another game's state parts."""
    if extra.get("p1_score") is not None:
        raise UsageError("--p1-score applies only to the two-player game")
    for key, option in POSITION_OPTIONS.items():
        if extra.get(key) is not None:
            raise UsageError(f"{option} applies only to the N-player games (two-player, ...)")


def parse_open_tiles(text: str, n_tiles: int, **extra: Any) -> int:
    """State id of a one-player box; refuses the N-player games' extra state parts."""
    refuse_position(extra)
    return parse_tiles(text, n_tiles)


@dataclass(frozen=True)
class TileCodec:
    """The state codec of a box of ``n_tiles`` tiles: text <-> bitmask of open tiles."""

    n_tiles: int

    def parse(self, text: str, **extra: Any) -> int:
        """The state id of open tiles as the user writes them."""
        return parse_open_tiles(text, self.n_tiles, **extra)

    def tiles(self, mask: int) -> list[int]:
        """The tiles of a bitmask, increasing (a move's tiles, or a state's open tiles)."""
        return [t for t in range(1, self.n_tiles + 1) if mask >> (t - 1) & 1]

    def text(self, mask: int) -> str:
        """The ``tiles`` text of a state, as the tables write it ("" when shut)."""
        sep = "" if self.n_tiles <= 9 else ","
        return sep.join(str(t) for t in self.tiles(mask))
