"""Words a person knows (issue 26): user-facing text names the sources a reader can look up (the
Scala simulator, the Double Shutter article, the course assignment, the FiveThirtyEight Riddler,
the Rust Knucklebones solver), never the project's own history ("seed 000", "seed 002's file")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.games.registry import REGISTRY
from tests.cli.test_help import COMMANDS
from tests.conftest import REPO, invoke

#: A name from the project's history: "seed 0", "seed 002's", "Seed 004", "seeds 000-004".
HISTORY = re.compile(r"\bseeds? 0", re.IGNORECASE)

DOCS = sorted(
    [
        *(REPO / "docs").glob("*.md"),
        REPO / "README.md",
        REPO / "data" / "README.md",
        *(REPO / "pipeline" / "templates").iterdir(),
    ]
)
#: Where help, errors, variant and query descriptions, report and page texts come from.
SOURCES = sorted(
    p for p in (REPO / "pipeline").rglob("*") if p.suffix in (".py", ".sql", ".html", ".md")
)


def test_the_history_pattern_catches_what_it_should() -> None:
    for text in ("seed 000", "Seed 002's verifier", "(seed 001)", "seeds 000-004"):
        assert HISTORY.search(text), text
    for text in ("--seed 7", "the seed is printed", "seed-d2", "seed=0"):
        assert not HISTORY.search(text), text


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_docs_and_templates_name_sources_a_person_can_find(path: Path) -> None:
    found = [line for line in path.read_text().splitlines() if HISTORY.search(line)]
    assert not found, found[:3]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_package_text_names_sources_a_person_can_find(path: Path) -> None:
    """Help, errors, variant and query descriptions all live in the package's files."""
    found = [line for line in path.read_text().splitlines() if HISTORY.search(line)]
    assert not found, found[:3]


@pytest.mark.parametrize("words", [path for path, _ in COMMANDS], ids=" ".join)
def test_every_commands_help(words: list[str]) -> None:
    result = invoke([*words, "--help"])
    assert result.code == 0, result.stderr
    assert not HISTORY.search(result.stdout), result.stdout


@pytest.mark.parametrize("args", [["variants"], ["query", "--list"], ["rules"]], ids=" ".join)
def test_listings(args: list[str]) -> None:
    result = invoke(args)
    assert result.code == 0, result.stderr
    assert not HISTORY.search(result.stdout), result.stdout


def test_variant_descriptions() -> None:
    found = {v.name: v.description for v in REGISTRY.values() if HISTORY.search(v.description)}
    assert not found
