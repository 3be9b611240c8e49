"""Generic solvers over the array form (pipeline.graph): rank order, value iteration, policy
evaluation, simulation. Never imports a game, polars or duckdb."""
