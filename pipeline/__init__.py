"""stb-pipeline: exact solutions of Shut the Box family dice games, as Parquet tables."""

__version__ = "0.1.0"
