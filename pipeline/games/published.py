"""Numbers other sources publish about the named variants, which their solved tables reproduce.

Each is a figure of the start position: the value at the start state under optimal play (or one
minus it, where the source gives the complement), as the source writes it, with how close ours
must be (the source's rounding). The tests check every one against the built tables, citing the
source; `export dataset` writes them in the dataset card beside the value the tables give, and
`verify` checks them again on an exported dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

#: How the sources are named to people (docs/variants.md names the same).
SCALA = "the Scala simulator"
DURANGO = "Durango Bill's Shut the Box tables (durangobill.com, STBstats.txt)"
#: The Riddler posed the Lever Box puzzle; the 13 digits are a blog post's solution of it.
LEVER_BOX = (
    'the "Lever Box" blog post (14 Apr 2018), solving the puzzle FiveThirtyEight\'s Riddler '
    "posed on 13 Apr 2018"
)
FIDDLER = "The Fiddler (13 Sep 2024)"
ARTICLE = "the Double Shutter article"
COURSE = "the course assignment (its verifier sample)"
CANANIAN = "cananian's two-player analysis (cananian.livejournal.com)"


@dataclass(frozen=True)
class Published:
    """One published figure of a variant's start position."""

    variant: str
    what: str
    """What the figure is, in words."""
    written: str
    """The figure as the source writes it."""
    value: float
    """The figure as a number."""
    tolerance: float
    """How far the tables' figure may be from ``value`` (the source's rounding)."""
    source: str
    complement: bool = False
    """The figure is one minus the start state's value (e.g. P(score != 0) of an objective
    that maximises P(score = 0))."""

    def ours(self, start_value: float) -> float:
        """The figure as the tables give it, from the start state's value."""
        return 1.0 - start_value if self.complement else start_value

    def agrees(self, start_value: float) -> bool:
        """Whether the tables reproduce the figure (within :attr:`tolerance`)."""
        return abs(self.ours(start_value) - self.value) <= self.tolerance


PUBLISHED: tuple[Published, ...] = (
    Published("classic", "P(shut) with perfect play", "7.143 %", 0.07143, 5e-6, SCALA),
    Published("classic", "P(shut) with perfect play", "7.1432 %", 0.071432, 5e-7, DURANGO),
    Published(
        "one-die-6",
        "P(shut) with perfect play",
        "956177159/9795520512 (9.7614 %)",
        956177159 / 9795520512,
        1e-12,
        DURANGO,
    ),
    Published(
        "lever", "P(shut) with perfect play", "0.0976137161704", 0.0976137161704, 1e-12, LEVER_BOX
    ),
    Published("one-die-6-max2", "P(shut) with perfect play", "7.4194 %", 0.074194, 5e-7, DURANGO),
    Published(
        "six-tiles-one-die", "P(shut) with perfect play", "145/1944", 145 / 1944, 1e-12, FIDDLER
    ),
    Published(
        "twelve-tiles",
        "P(shut) with perfect play",
        "0.36 %",
        0.0036,
        5e-5,
        "the arcini/Shut-The-Box-Simulator README, citing Durango Bill",
    ),
    Published("double-shutter", "minimum expected score", "19.427", 19.427, 5e-4, ARTICLE),
    Published(
        "double-shutter-zero",
        "P(not finishing with 0), playing for 0",
        "0.923",
        0.923,
        5e-4,
        ARTICLE,
        complement=True,
    ),
    Published(
        "two-player",
        "player 1's expected wins (a tie counts 1/2)",
        "0.5028103544024047",
        0.5028103544024047,
        1e-12,
        COURSE,
    ),
    Published(
        "two-player-stake",
        "player 1's expected winnings, in stakes",
        "a loss of about 2.5 % of the stake",
        -0.025,
        1e-3,
        CANANIAN,
    ),
)


def published(variant: str) -> list[Published]:
    """The published figures of ``variant`` (none for most)."""
    return [p for p in PUBLISHED if p.variant == variant]
