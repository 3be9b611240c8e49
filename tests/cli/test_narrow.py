"""Tables on an 80-column terminal (issue 26): `variants`, `query --list`, query results and
the build summary fit in 80 columns by folding their long text (or, for a result too wide to
sit side by side, one block per row), and every header stays whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import invoke


@pytest.fixture(scope="module")
def classic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("narrow")
    assert invoke(["build", "--variant", "classic", "--data-dir", data]).code == 0
    return data


CASES = [
    (["variants"], ["variant", "in all", "description"]),
    (["query", "--list"], ["query", "description"]),
    (["rules"], ["option", "meaning"]),
    (["query", "strategy_comparison"], ["strategy", "win_pct", "sim_ci_high_pct"]),
    (["query", "top_states"], ["place", "tiles", "value", "n_open", "open_sum"]),
    (["move", "12345", "7"], ["move", "leaves", "value", "loses"]),
    (["build", "--variant", "classic", "--force"], ["variant", "states", "value at start"]),
]


@pytest.mark.parametrize("width", [80])
@pytest.mark.parametrize(("args", "headers"), CASES, ids=lambda v: " ".join(v)[:30])
def test_tables_fit_a_narrow_terminal_with_whole_headers(
    classic: Path, monkeypatch: pytest.MonkeyPatch, width: int, args: list[str], headers: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    data = [] if args[0] in ("variants", "rules") or args[:2] == ["query", "--list"] else classic
    result = invoke([*args, *(["--data-dir", data] if data else [])])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= width, result.stdout
    for header in headers:
        assert any(f" {header} " in line for line in lines), (header, result.stdout)


def test_a_pipe_gets_whole_rows(classic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a terminal (and no $COLUMNS) nothing would wrap a row: one line per variant."""
    monkeypatch.delenv("COLUMNS", raising=False)
    result = invoke(["variants"])
    assert result.code == 0, result.stderr
    assert any(
        "maximise P(shut) (the Scala simulator)" in line for line in result.stdout.splitlines()
    )


@pytest.mark.parametrize(
    ("args", "most"),
    [(["variants"], 80), (["query", "--list"], 80), (["query", "strategy_card"], 70)],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_long_listings_waste_no_lines_at_80_columns(
    classic: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], most: int
) -> None:
    """Issue 48: at 80 columns the card ran 129 lines (its `line` column kept whole, its rule
    folded into 11 columns; now both fold), `variants` 85 and `query --list` 82 (now without
    borders: their 2,600 and 3,000 characters of text are most of what is left)."""
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke([*args, "--data-dir", classic])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= most and max(len(line) for line in lines) <= 80, result.stdout
