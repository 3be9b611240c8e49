"""Names and defaults the command line shows without loading numpy."""

#: The tile strategies of strategies.py, by name (strategies.py checks that the two lists agree).
STRATEGY_NAMES: tuple[str, ...] = (
    "optimal",
    "random",
    "greedy",
    "max-tiles",
    "fewest-tiles",
    "low-first",
    "most-options",
    "most-outcomes",
)
#: Defaults of `stb-pipeline benchmark`.
DEFAULT_GAMES = 1_000_000
DEFAULT_SEED = 1
