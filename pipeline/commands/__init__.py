"""Command groups beyond the core stages. Each module has ``register(app)``; add yours here."""

from __future__ import annotations

import importlib

import typer

#: Modules under pipeline.commands whose ``register(app)`` adds commands to `stb-pipeline`.
MODULES: list[str] = [
    "two_player",
    "query",
    "play",
    "report",
    "benchmark",
    "knucklebones",
    "verify",
    "explore",
]


def register_all(app: typer.Typer) -> None:
    """Let every command module add its commands."""
    for name in MODULES:
        importlib.import_module(f"pipeline.commands.{name}").register(app)
