"""Named one-player Shut the Box variants (rules are built only when a variant is used)."""

from __future__ import annotations

from typing import Any

from pipeline.games.registry import NAME_READERS, OPTION_READERS, RULE_READERS, Variant, register
from pipeline.games.shutbox import custom
from pipeline.games.tiles import TileCodec


def stb(name: str, description: str, in_all: bool = True, **rules: Any) -> Variant:
    """Register a one-player Shut the Box variant with the given RuleSet fields."""

    def make() -> Any:
        from pipeline.games.shutbox.game import RuleSet, ShutTheBox

        return ShutTheBox(RuleSet(**rules))

    codec = TileCodec(rules.get("tiles", 9))
    return register(Variant(name, description, make, in_all, family="shutbox", codec=codec))


stb("classic", "9 tiles, always two dice, maximise P(shut) (the Scala simulator)")
stb(
    "classic-score",
    "9 tiles, always two dice, minimise the expected final score",
    objective="score",
)
stb(
    "lever",
    "9 tiles; one die or two by choice once 7, 8, 9 are shut; maximise P(shut) (the Lever Box "
    "of the FiveThirtyEight Riddler)",
    one_die="optional",
    one_die_shut=(7, 8, 9),
)
stb(
    "one-die-6",
    "9 tiles; one die (forced) once the open tiles sum to 6 or less; maximise P(shut)",
    one_die="forced",
    one_die_sum=6,
)
stb(
    "one-die-6-max2",
    "as one-die-6, shutting at most two tiles per roll (Durango Bill)",
    one_die="forced",
    one_die_sum=6,
    max_per_move=2,
)
stb("six-tiles-one-die", "6 tiles, always one die, maximise P(shut) (The Fiddler)", tiles=6, dice=1)
stb("twelve-tiles", "12 tiles, always two dice, maximise P(shut)", tiles=12)
stb(
    "digital-score",
    "9 tiles, one die once the open sum is 6 or less, minimise the digital "
    "score (open tiles read as a number)",
    one_die="forced",
    one_die_sum=6,
    objective="score",
    scoring="digital",
)

# Custom rule sets are named after their rules; every command accepts those names. The command
# line's rule options are read here (but those of a family built on this one: rule_options.py).
NAME_READERS.append(custom.variant_from_name)
RULE_READERS["shut-the-box"] = custom.variant_from_rules
OPTION_READERS["shutbox"] = custom.variant_from_options
