"""The registry of named variants: each name maps to a game (rules) built on demand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.errors import UsageError
from pipeline.games.base import Game
from pipeline.games.double_shutter import DoubleShutter, DoubleShutterRules
from pipeline.games.knucklebones import Knucklebones, KnuckleRules
from pipeline.games.shutbox import RuleSet, ShutTheBox
from pipeline.games.two_player import TwoPlayer, TwoPlayerRules


@dataclass(frozen=True)
class Variant:
    """A named game: how to build it, a one-line description, and whether `all` includes it."""

    name: str
    description: str
    make: Callable[[], Game]
    in_all: bool = True


REGISTRY: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    """Add a variant to the registry (names are unique)."""
    if variant.name in REGISTRY:
        raise ValueError(f"variant {variant.name!r} is registered twice")
    REGISTRY[variant.name] = variant
    return variant


def stb(name: str, description: str, rules: RuleSet, in_all: bool = True) -> Variant:
    """Register a one-player Shut the Box variant."""
    return register(Variant(name, description, lambda: ShutTheBox(rules), in_all))


stb("classic", "9 tiles, always two dice, maximise P(shut) (seed 000)", RuleSet())
stb(
    "classic-score",
    "9 tiles, always two dice, minimise the expected final score",
    RuleSet(objective="score"),
)
stb(
    "lever",
    "9 tiles; one die or two by choice once 7, 8, 9 are shut; maximise P(shut) (seed 003)",
    RuleSet(one_die="optional", one_die_shut=(7, 8, 9)),
)
stb(
    "one-die-6",
    "9 tiles; one die (forced) once the open tiles sum to 6 or less; maximise P(shut)",
    RuleSet(one_die="forced", one_die_sum=6),
)
stb(
    "one-die-6-max2",
    "as one-die-6, shutting at most two tiles per roll (Durango Bill)",
    RuleSet(one_die="forced", one_die_sum=6, max_per_move=2),
)
stb(
    "six-tiles-one-die",
    "6 tiles, always one die, maximise P(shut) (The Fiddler)",
    RuleSet(tiles=6, dice=1),
)
stb("twelve-tiles", "12 tiles, always two dice, maximise P(shut)", RuleSet(tiles=12))
stb(
    "digital-score",
    "9 tiles, one die once the open sum is 6 or less, minimise the digital "
    "score (open tiles read as a number)",
    RuleSet(one_die="forced", one_die_sum=6, objective="score", scoring="digital"),
)
register(
    Variant(
        "two-player",
        "two players, 9 tiles, one die (forced) once the mover's open tiles sum to 6 or less; "
        "value = the mover's expected wins (seed 002)",
        lambda: TwoPlayer(TwoPlayerRules()),
    )
)

register(
    Variant(
        "double-shutter",
        "Double Shutter (two rows of 9 tiles), one die by choice once the shuttable tiles sum to "
        "6 or less, minimise the expected score 2 x front + back; summary p(n) (seed 001)",
        lambda: DoubleShutter(DoubleShutterRules(), thresholds=range(21)),
    )
)
register(
    Variant(
        "double-shutter-zero",
        "as double-shutter, maximise P(final score = 0) (seed 001)",
        lambda: DoubleShutter(DoubleShutterRules(objective="shut")),
    )
)


def knucklebones(name: str, description: str, rules: KnuckleRules, in_all: bool = True) -> Variant:
    """Register a Knucklebones board (solved by value iteration)."""
    return register(Variant(name, description, lambda: Knucklebones(rules), in_all))


knucklebones(
    "knucklebones-2x2",
    "Knucklebones, 2 columns x 2 rows, six-sided die, maximise P(win) (a draw counts 1/2)",
    KnuckleRules(columns=2, rows=2),
)
knucklebones(
    "knucklebones-2x2-score",
    "Knucklebones, 2 columns x 2 rows, six-sided die, maximise the expected score difference",
    KnuckleRules(columns=2, rows=2, objective="score"),
)
knucklebones(
    "knucklebones",
    "Knucklebones as in Cult of the Lamb (3x3, six-sided die); too big to build: use "
    "`stb-pipeline knucklebones solve` and `play`",
    KnuckleRules(),
    in_all=False,
)
for _cols, _rows, _faces in ((2, 3, 6), (3, 2, 6), (3, 3, 4)):
    _suffix = "" if _faces == 6 else f"-d{_faces}"
    for _objective, _what in (("wins", "P(win)"), ("score", "the expected score difference")):
        knucklebones(
            f"knucklebones-{_cols}x{_rows}{_suffix}" + ("-score" if _objective == "score" else ""),
            f"Knucklebones, {_cols} columns x {_rows} rows, {_faces}-sided die, maximise {_what} "
            "(minutes; not in all)",
            KnuckleRules(columns=_cols, rows=_rows, faces=_faces, objective=_objective),
            in_all=False,
        )


def get_variant(name: str) -> Variant:
    """The registered variant called ``name``; UsageError naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise UsageError(f"unknown variant {name!r}; known variants: {known}, all") from None


def resolve(names: list[str]) -> list[Variant]:
    """Variants named on the command line; ``all`` expands to every variant marked in_all."""
    out: list[Variant] = []
    for name in names:
        found = [v for v in REGISTRY.values() if v.in_all] if name == "all" else [get_variant(name)]
        out.extend(v for v in found if v not in out)
    return out


def custom_variant(rules: RuleSet, name: str | None = None) -> Variant:
    """A variant for a rule set given on the command line (named after its rules by default)."""
    label = name or rules.slug()
    if label in REGISTRY or label == "all":
        raise UsageError(f"custom variant name {label!r} is taken by a registered variant")
    return Variant(label, "custom rule set", lambda: ShutTheBox(rules), in_all=False)
