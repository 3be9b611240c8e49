"""Command groups beyond the core stages. Each module has ``register(app)``; add yours here."""

from __future__ import annotations

import importlib

import typer

#: Modules under pipeline.cli.commands whose ``register(app)`` adds commands to `stb-pipeline`.
MODULES: list[str] = [
    "export",
    "course",
    "query",
    "play",
    "report",
    "benchmark",
    "knucklebones",
    "verify",
    "explore",
    "serve",
]


def register_all(app: typer.Typer) -> None:
    """Let every command module add its commands."""
    for name in MODULES:
        importlib.import_module(f"pipeline.cli.{name}").register(app)
