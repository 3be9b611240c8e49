"""The server's side of an answer: read a request's query parameters, ask the library
(:class:`pipeline.answer.answers.Answers`), and return its JSON with the page's link.

Every answer, its values, moves, regrets and tie rule, comes from :mod:`pipeline.answer`, the
same call `expect`, `move`, the Python API, the explorer and `play` make; here only the
parameters are checked (a one-line UsageError, which the server turns into a 400) and the link
that restores a position is built. This module imports no game: what a variant takes (its
fields, its view) is asked of the library.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus, urlencode

from pipeline.answer.answers import Answers
from pipeline.answer.boards import MAX_DEPTH
from pipeline.answer.describe import describe, listing
from pipeline.apps.server import POSITION_OPTIONS
from pipeline.errors import TableError, TablesMissingError, UsageError
from pipeline.store.directory import Entry
from pipeline.store.states import DEFAULT_CACHE_MB

#: The largest text a state parameter may be (boards, tiles): far above any real one.
MAX_TEXT = 200
#: Two-player's ``p1_score`` (= best_score): still accepted as a parameter, no menu of its own.
NPLAYER_SYNONYMS = ("p1_score",)


def check_int(name: str, text: str | None, low: int, high: int) -> int | None:
    """A whole number parameter within [low, high] (None when absent); UsageError otherwise."""
    if text is None or text == "":
        return None
    raw = text.strip()
    digits = raw[1:] if raw[:1] in "+-" else raw
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 12:
        raise UsageError(f"{name} must be a whole number, not {text[:40]!r}")
    value = int(raw)
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_text(name: str, text: str | None) -> str | None:
    """A text parameter of reasonable length and printable characters."""
    if text is None:
        return None
    if len(text) > MAX_TEXT:
        raise UsageError(f"{name} is longer than {MAX_TEXT} characters")
    if not text.isprintable():
        raise UsageError(f"{name} holds characters that are not printable")
    return text


class Positions:
    """The answers of one data directory, as the server asks them (thread-safe: the library's
    index is)."""

    def __init__(self, data_dir: Path, cache_mb: float = DEFAULT_CACHE_MB) -> None:
        self.answers = Answers(Path(data_dir), cache_mb)

    def in_memory(self, name: str) -> bool:
        """Whether a position of ``name`` is answered from arrays already read (microseconds,
        no file read: the server answers it on its event loop rather than in a worker thread)."""
        return self.answers.index.in_memory(name)

    def searched(self, name: str) -> bool:
        """Whether ``name``'s positions are answered by the Knucklebones search (a board
        without tables): compiled work of milliseconds to seconds that holds the GIL, which the
        server runs in its search processes (:mod:`pipeline.apps.server.searches`)."""
        entry = self.answers.directory.snapshot().entries.get(name)
        if entry is None or entry.view != "boards":
            return False
        # the one answer's tables are found by the board's rules (a build under another name)
        return entry.built is False and self.answers.boards.found(entry.variant).own is None

    def index(self) -> dict[str, Any]:
        """Every variant: the built ones, the others with the command that builds them."""
        return listing(self.answers)

    def describe(self, name: str) -> dict[str, Any]:
        """What the page needs to draw a variant's positions."""
        return describe(self.answers, self.answers.directory.entry(name))

    def position(self, name: str, params: Mapping[str, str]) -> dict[str, Any]:
        """The answer for one position; ``params`` are the request's query parameters."""
        entry = self.answers.directory.entry(name)
        if entry.view == "boards":
            return self._board(entry, params)
        if not entry.built:
            raise TablesMissingError(f"{entry.name} is not built: run `{entry.build_command()}`")
        fields = list(self.answers.field_names(entry.variant))
        allowed = {"id", "tiles", "state", "roll", *fields}
        if fields:
            allowed.update(NPLAYER_SYNONYMS)
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise UsageError(
                f"unknown parameter {unknown[0][:40]!r} for {entry.name} "
                f"(known: {', '.join(sorted(allowed))})"
            )
        roll = check_int("roll", params.get("roll"), -(2**31), 2**31 - 1)
        try:
            found = self._answer(entry, params, fields, roll)
        except TableError as exc:  # said as the catalog says it once it has looked again
            raise TableError(
                f"{entry.name} is built but its tables cannot be read: {exc}"
            ) from None
        out = found.to_json()
        out["view"] = entry.view
        out["link"] = _link(entry, out["state"], roll)
        return out

    def _answer(
        self, entry: Entry, params: Mapping[str, str], fields: list[str], roll: int | None
    ) -> Any:
        """The library's answer for the position the parameters name: ``id``, or the tiles
        (with the fields that name an N-player position), or a Double Shutter ``state``."""
        variant = entry.variant
        state_id = check_int("id", params.get("id"), 0, 2**62)
        tiles = check_text("tiles", params.get("tiles"))
        digits = check_text("state", params.get("state"))
        if state_id is None and digits is not None:
            if entry.view != "rows":
                raise UsageError("state= names a Double Shutter position; give tiles= here")
            if not digits or any(c not in "012" for c in digits):
                raise UsageError(
                    f"state {digits[:40]!r}: one digit 0, 1 or 2 per column (0 both tiles up, "
                    "1 front down, 2 both down)"
                )
            tiles = digits
        if state_id is None and tiles is None:
            raise UsageError("name the position: tiles=1245 (the open tiles), or id=N")
        if state_id is None and tiles == "" and variant.codec is not None:
            state_id = 0  # the shut box
        extra = {}
        for key in (*fields, *NPLAYER_SYNONYMS) if fields else ():
            value = check_int(key, params.get(key), -(2**31), 2**31 - 1)
            if value is not None:
                extra[key] = value
        try:
            if state_id is not None:
                return self.answers.position(variant, state_id=state_id, roll=roll)
            return self.answers.position(variant, tiles, roll=roll, **extra)
        except UsageError as exc:
            message = str(exc)
            for option, name in POSITION_OPTIONS.items():
                message = message.replace(option, name)
            raise UsageError(message) from None

    def _board(self, entry: Entry, params: Mapping[str, str]) -> dict[str, Any]:
        """A Knucklebones position (MOVER;OPPONENT, the mover's board first) and, with a die,
        every column ranked: exact from the tables where the board is built, else searched."""
        unknown = sorted(set(params) - {"board", "die", "depth"})
        if unknown:
            raise UsageError(
                f"unknown parameter {unknown[0][:40]!r} for {entry.name} (known: board, die, depth)"
            )
        board = check_text("board", params.get("board"))
        die = check_int("die", params.get("die"), -(2**31), 2**31 - 1)  # the library checks it
        depth = check_int("depth", params.get("depth"), 1, MAX_DEPTH)
        # the one answer: exact where the board's tables are found (by its rules), else searched
        found = self.answers.board(entry.variant, board, die, depth)
        out = found.to_json()
        q: dict[str, Any] = {"board": out["board"]}
        if die is not None:
            q["die"] = die
        if not found.exact and params.get("depth"):
            q["depth"] = depth
        out["link"] = f"/{entry.name}/position?{urlencode(q)}"
        return out


def query_string(q: Mapping[str, Any]) -> str:
    """``urlencode(q)``, the same text, quicker for the values a link holds (numbers and
    digits need no quoting: a tenth of the work of quoting every one)."""
    return "&".join(f"{_quoted(key)}={_quoted(str(value))}" for key, value in q.items())


def _quoted(text: str) -> str:
    """``quote_plus(text)``: letters, digits, ``_`` and ``-`` stand as they are."""
    if text.isascii() and text.replace("_", "a").lstrip("-").isalnum():
        return text
    return quote_plus(text)


def _link(entry: Entry, state: Mapping[str, Any], roll: int | None) -> str:
    """The page of a position (what restores it)."""
    if entry.view == "rows" and state.get("state") is not None:
        q: dict[str, Any] = {"state": state["state"]}
    elif state.get("tiles") is not None:
        q = {"tiles": state["tiles"]}
        q.update({k: v for k, v in state.get("fields", {}).items() if v is not None})
    else:
        q = {"id": state["id"]}
    if roll is not None:
        q["roll"] = roll
    return f"/{entry.name}/position?{query_string(q)}"
