"""Rules a person can remember, as data: lexicographic orders of up to three move keys.

A *key* is something a player sees at the table when choosing which tiles to shut (the highest
tile a move shuts, how many tiles it shuts, how many roll totals stay playable, ...). A *rule*
ranks the legal moves of a roll by one to three keys in order, each with a direction (``max``:
larger first, ``min``: smaller first), and plays the first. A tie left by its keys goes to the
move holding the highest tile where two moves differ (the largest tile bitmask: the solver's tie
rule), so every rule picks exactly one move. Where the rules let a player choose one die, a rule
also says when to: "roll one die once the open tiles sum to T or less" (``one_die_at_most``;
0: never).

A rule is written for the command line and the tables as its *spec*: the signed keys joined by
commas, then the one-die threshold, e.g. ``max-high,min-count,one-die-le6``. Plain Python (no
numpy): ``play --rule`` parses a spec before any game is built.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from pipeline.errors import UsageError

#: The most keys a rule of the family uses.
MAX_KEYS = 3
#: Directions of a key: larger first (+1) or smaller first (-1).
SIGNS = {"max": 1, "min": -1}


@dataclass(frozen=True)
class Key:
    """A move key: its name in specs, what it measures, and the rule's words in each direction."""

    name: str
    what: str
    larger: str
    """The rule's words when larger values come first (``max-NAME``)."""
    smaller: str
    """The rule's words when smaller values come first (``min-NAME``)."""

    def words(self, sign: int) -> str:
        """What a rule says for this key in direction ``sign``."""
        return self.larger if sign > 0 else self.smaller


#: Every key, in the order the search tries them. A move that shuts the box counts as leaving
#: no tile open (top 0, score 0, no small tile) and as keeping every roll total playable
#: (``totals`` and ``chance`` above every other move's): shutting the box beats everything there.
KEYS: tuple[Key, ...] = (
    Key(
        "high",
        "the highest tile the move shuts",
        "shut the highest tile you can",
        "make the highest tile you shut as low as you can",
    ),
    Key(
        "count",
        "how many tiles the move shuts",
        "shut as many tiles as you can",
        "shut as few tiles as you can",
    ),
    Key(
        "low",
        "the lowest tile the move shuts",
        "make the lowest tile you shut as high as you can",
        "shut the lowest tile you can",
    ),
    Key(
        "top",
        "the highest tile left open after the move",
        "keep your highest open tile as high as you can",
        "bring your highest open tile as low as you can",
    ),
    Key(
        "score",
        "the score left after the move (the open tiles' sum, or the digital score: the same "
        "for every move of a roll with sum scoring)",
        "leave the highest score you can",
        "leave the lowest score you can",
    ),
    Key(
        "totals",
        "how many roll totals (of the dice the rule rolls next) the tiles left can still play",
        "leave as many roll totals playable as you can",
        "leave as few roll totals playable as you can",
    ),
    Key(
        "chance",
        "the chance that the next roll (of the dice the rule rolls next) can be played",
        "leave the best chance that your next roll can be played",
        "leave the worst chance that your next roll can be played",
    ),
    Key(
        "small",
        "whether a tile of 1 to 3 stays open (1) or not (0)",
        "keep a tile of 1 to 3 open if you can",
        "shut every tile of 1 to 3 if you can",
    ),
    Key(
        "smalls",
        "how many of the tiles 1, 2, 3 stay open",
        "keep as many of 1, 2, 3 open as you can",
        "keep as few of 1, 2, 3 open as you can",
    ),
)
KEY_NAMES: tuple[str, ...] = tuple(k.name for k in KEYS)
#: Keys whose values depend on how many dice the rule rolls next (the look-ahead keys).
LOOKAHEAD = frozenset({"totals", "chance"})
#: Spec tokens of the one-die threshold: ``one-die-leT`` (T >= 1) or ``one-die-never``.
ONE_DIE_PREFIX = "one-die-le"
ONE_DIE_NEVER = "one-die-never"


@dataclass(frozen=True)
class Rule:
    """A rule of the family: signed keys, most important first, and the one-die threshold."""

    keys: tuple[tuple[str, int], ...]
    """(key name, +1 larger first or -1 smaller first), most important first."""
    one_die_at_most: int | None = None
    """Roll one die (where the rules allow it) once the open tiles sum to this or less; 0 never;
    None where the rules leave no choice of dice."""

    @property
    def size(self) -> int:
        """How many keys the rule uses."""
        return len(self.keys)

    @property
    def spec(self) -> str:
        """The rule as ``play --rule`` and the tables write it."""
        parts = [f"{'max' if sign > 0 else 'min'}-{name}" for name, sign in self.keys]
        if self.one_die_at_most is not None:
            t = self.one_die_at_most
            parts.append(ONE_DIE_NEVER if t <= 0 else f"{ONE_DIE_PREFIX}{t}")
        return ",".join(parts)

    @property
    def text(self) -> str:
        """The rule in words, one sentence."""
        words = [KEY_BY_NAME[name].words(sign) for name, sign in self.keys]
        sentence = "; then ".join(words) if words else "shut the highest tiles you can"
        if self.one_die_at_most is not None:
            t = self.one_die_at_most
            dice = (
                "never roll one die"
                if t <= 0
                else f"roll one die once the open tiles sum to {t} or less"
            )
            sentence += f"; {dice}"
        return sentence[0].upper() + sentence[1:]


KEY_BY_NAME = {k.name: k for k in KEYS}


@functools.cache
def orders(max_keys: int = MAX_KEYS) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Every ordered choice of 1..``max_keys`` distinct keys, each with a direction: fewer keys
    first, then in search order. A key appears at most once (in one direction: the other could
    not split what the first leaves tied)."""
    return tuple(
        tuple(zip(combo, signs, strict=True))
        for size in range(1, max_keys + 1)
        for combo in itertools.permutations(KEY_NAMES, size)
        for signs in itertools.product((1, -1), repeat=size)
    )


#: The named strategies that are rules of the family (the same keys and the same tie rule):
#: ``play --rule greedy`` coaches against them. (``low-first`` breaks its ties towards the lowest
#: tiles, ``random`` mixes, ``optimal`` is the solver: none is a rule of the family.)
NAMED_RULES = {
    "greedy": "max-high,min-count",
    "max-tiles": "max-count,max-high",
    "fewest-tiles": "min-count",
    "most-options": "max-totals,max-high,min-count",
    "most-outcomes": "max-chance,max-high,min-count",
}


def parse_spec(spec: str) -> Rule:
    """The rule a spec names (``max-high,min-count,one-die-le6``); UsageError with what is
    wrong and what is allowed otherwise."""
    tokens = [t.strip() for t in spec.split(",")]
    if not any(tokens):
        raise UsageError(f"rule {spec!r} names no key; {_spec_help()}")
    if not all(tokens):  # "max-high,,min-count": a slip, not a rule of two keys
        raise UsageError(f"rule {spec!r}: keys separated by commas, with none empty")
    threshold: int | None = None
    keys: list[tuple[str, int]] = []
    for token in tokens:
        if token == ONE_DIE_NEVER or token.startswith(ONE_DIE_PREFIX):
            threshold = _threshold(token, spec)
            continue
        direction, _, name = token.partition("-")
        if direction not in SIGNS or name not in KEY_BY_NAME:
            raise UsageError(f"rule {spec!r}: {token!r} is not a key; {_spec_help()}")
        if any(name == k for k, _ in keys):
            raise UsageError(f"rule {spec!r} uses key {name!r} twice")
        keys.append((name, SIGNS[direction]))
    if not keys:
        raise UsageError(f"rule {spec!r} names no key; {_spec_help()}")
    if len(keys) > MAX_KEYS:
        raise UsageError(
            f"rule {spec!r} has {len(keys)} keys; the family's rules have at most {MAX_KEYS}"
        )
    return Rule(tuple(keys), threshold)


def _threshold(token: str, spec: str) -> int:
    """The open-sum threshold of a ``one-die-leT`` token (0 for ``one-die-never``)."""
    if token == ONE_DIE_NEVER:
        return 0
    digits = token[len(ONE_DIE_PREFIX) :]
    if not (digits.isascii() and digits.isdigit() and 0 < len(digits) < 5 and int(digits) > 0):
        raise UsageError(
            f"rule {spec!r}: {token!r} is not a one-die threshold (write {ONE_DIE_PREFIX}6 for "
            f"one die once the open tiles sum to 6 or less, or {ONE_DIE_NEVER})"
        )
    return int(digits)


def _spec_help() -> str:
    """What a spec may hold, for error messages."""
    names = ", ".join(KEY_NAMES)
    return (
        f"write keys as max-KEY or min-KEY joined by commas (keys: {names}), optionally with "
        f"{ONE_DIE_PREFIX}T or {ONE_DIE_NEVER}, e.g. max-high,min-count"
    )
