"""The build and benchmark hooks of the tile games (Shut the Box, Double Shutter): their
strategies can be evaluated exactly and simulated, because a move shuts tiles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from pipeline.games.base import SolvedView


class TileStrategyHooks:
    """Mixed into a tile game (before :class:`pipeline.games.base.Game`) to add the strategy
    tables to its build and the Monte Carlo benchmark of its strategies."""

    def extra_tables(self, solved: SolvedView) -> dict[str, pl.DataFrame]:
        """The game's own tables (summary) plus the strategy benchmark tables.

        The summary (Double Shutter's p(n) family: twenty objectives solved at once) is made on
        a thread of its own beside the strategies: the build waits for both, and they only
        read the solved variant.
        """
        from concurrent.futures import ThreadPoolExecutor

        from pipeline.games.shutbox import benchmark

        own = super().extra_tables  # type: ignore[misc]  # Game's, next in the MRO
        with ThreadPoolExecutor(1, thread_name_prefix="stb-summary") as pool:
            base = pool.submit(own, solved)
            strategy = benchmark.build_tables(solved)
            return {**base.result(), **strategy}

    def simulate(
        self, solved: SolvedView, games: int, seed: int, names: Any = None, progress: Any = None
    ) -> tuple[list[Any], pl.DataFrame]:
        """Monte Carlo benchmark of the tile strategies."""
        from pipeline.games.shutbox import benchmark

        sims = benchmark.simulate_strategies(solved, games, seed, names, progress)
        return sims, benchmark.simulation_rows(sims)
