"""The custom rule options of the command line (``--tiles 12 --dice 3 --players 3 ...``), and
which game family reads a set of them.

Plain Python: the CLI adds these options to its commands at start-up, before any game loads.
Every option belongs to one family: the dice options to one-player Shut the Box (``shutbox``),
``--players``, ``--payoff`` and ``--shut-multiplier`` to the N-player game (``nplayer``), which is
built on the one-player rules and reads their dice options too. The options given are read by
the first family of :data:`READ_BY` that owns one of them; that family turns them into a variant
(a reader it registers in :data:`pipeline.games.registry.OPTION_READERS`). So no family imports
another to read its options, and the shared modules of ``pipeline.games`` name no family's code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.errors import UsageError
from pipeline.games.registry import option_reader

if TYPE_CHECKING:
    from pipeline.games.registry import Variant


@dataclass(frozen=True)
class RuleOption:
    """One rule option: its type, its help line, and the family that owns it."""

    kind: type
    help: str
    family: str


#: Options that describe a custom rule set; the CLI adds them to commands (@with_rules).
CUSTOM_RULE_OPTIONS: dict[str, RuleOption] = {
    "tiles": RuleOption(int, "Custom rules: number of tiles (1..n).", "shutbox"),
    "dice": RuleOption(int, "Custom rules: number of dice normally rolled.", "shutbox"),
    "sides": RuleOption(int, "Custom rules: sides of each die.", "shutbox"),
    "one_die": RuleOption(str, "Custom rules: one-die rule: never, forced or optional.", "shutbox"),
    "one_die_sum": RuleOption(
        int, "Custom rules: one die when the open tiles sum to at most this.", "shutbox"
    ),
    "one_die_shut": RuleOption(
        str, "Custom rules: one die once these tiles are shut, e.g. 789.", "shutbox"
    ),
    "objective": RuleOption(
        str, "Custom rules: shut (max P(shut)), score (min E[score]) or target.", "shutbox"
    ),
    "target": RuleOption(
        int, "Custom rules: for objective target, maximise P(score <= target).", "shutbox"
    ),
    "max_per_move": RuleOption(
        int, "Custom rules: at most this many tiles shut per roll.", "shutbox"
    ),
    "scoring": RuleOption(
        str, "Custom rules: sum (of open tiles) or digital (tiles read as a number).", "shutbox"
    ),
    "players": RuleOption(
        int, "Custom rules: players in turn, 2..6 (the N-player game; default one).", "nplayer"
    ),
    "payoff": RuleOption(
        str, "Custom rules, with --players: share (of the win) or stake (winnings).", "nplayer"
    ),
    "shut_multiplier": RuleOption(
        int, "Custom rules, with --payoff stake: stakes paid for a shut.", "nplayer"
    ),
    "name": RuleOption(str, "Custom rules: the variant name to store them under.", ""),
}

#: Which family reads a set of options: the first of these that owns one of the options given
#: (a family before the families it is built on).
READ_BY = ("nplayer", "shutbox")

#: What a custom variant name may look like (it is written in tables and typed in --variant).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def options_of(family: str) -> tuple[str, ...]:
    """The rule options that ``family`` owns, in the order of :data:`CUSTOM_RULE_OPTIONS`."""
    return tuple(name for name, option in CUSTOM_RULE_OPTIONS.items() if option.family == family)


def variant_from_options(values: dict[str, Any]) -> Variant | None:
    """A custom variant from the rule options given (None where none was given): the options
    are checked here as far as every family reads them alike (the name, the one-die tiles), then
    read by their family (:data:`READ_BY`)."""
    given = {k: v for k, v in values.items() if v is not None and k != "name"}
    name = values.get("name")
    if name is not None and not VARIANT_NAME.fullmatch(name):
        raise UsageError(
            f"--name {name!r}: use letters, digits, '.', '_' and '-' (not first), e.g. my-rules"
        )
    if not given:
        if name:
            raise UsageError("--name needs rule options such as --tiles")
        return None
    if "one_die_shut" in given:
        given["one_die_shut"] = _one_die_tiles(str(given["one_die_shut"]))
    if "one_die" not in given and ("one_die_sum" in given or "one_die_shut" in given):
        given["one_die"] = "optional"
    owners = {CUSTOM_RULE_OPTIONS[key].family for key in given}
    family = next(f for f in READ_BY if f in owners)
    return option_reader(family)(given, name)


def _one_die_tiles(text: str) -> tuple[int, ...]:
    """The tiles of ``--one-die-shut`` (``789``, ``7,8,9`` or ``10 11``); UsageError otherwise."""
    spaced = text.replace(",", " ")
    tokens = spaced.split() if " " in spaced.strip() else list(spaced.strip())
    # a box holds at most 24 tiles: two digits each
    if not tokens or not all(t.isdigit() and t.isascii() and len(t) <= 2 for t in tokens):
        raise UsageError(f"--one-die-shut {text!r}: give tiles, e.g. 789")
    shut = [int(t) for t in tokens]
    twice = sorted({t for t in shut if shut.count(t) > 1})
    if twice:
        raise UsageError(f"--one-die-shut {text!r}: tile {twice[0]} is named twice")
    return tuple(shut)
