"""The report: every chart is a real PNG, the page embeds them, missing tables become notes."""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib.image as mpimg
import polars as pl
import pytest

from pipeline.analysis.report import PAGE, build_report  # sets the Agg backend first
from pipeline.store import tables

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_real_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path.name} is not a PNG"
    assert len(data) > 1000
    pixels = mpimg.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels.std() > 0.01, f"{path.name} is blank"
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with matplotlib, but the check does not depend on it
        return
    with Image.open(path) as im:
        im.verify()


def add_synthetic_tables(data: Path) -> None:
    """Rows shaped like the tables issues 3-6 write, to draw their charts (values made up)."""
    strategies = ["optimal", "greedy", "random"]
    rows = []
    for variant in ("classic", "knucklebones-2x2"):
        for i, strategy in enumerate(strategies):
            rate = 0.07 / (i + 1)
            rows.append((variant, strategy, "exact", None, None, rate, None, None, None))
            rows.append(
                (
                    variant,
                    strategy,
                    "simulation",
                    10_000,
                    int(rate * 10_000),
                    rate,
                    rate - 0.003,
                    rate + 0.003,
                    1,
                )
            )
    columns = [
        "variant",
        "strategy",
        "method",
        "games",
        "wins",
        "win_rate",
        "ci_low",
        "ci_high",
        "seed",
    ]
    bench = pl.DataFrame(rows, schema=columns, orient="row")
    tables.write_atomic(data / "benchmarks.parquet", bench.to_arrow())
    summary = pl.DataFrame(
        {
            "variant": ["double-shutter"] * 21 + ["three-player"] * 6,
            "figure": ["p_above"] * 21 + ["expected_payoff"] * 3 + ["loss_shut_chaser"] * 3,
            "objective": ["target"] * 21 + ["wins"] * 6,
            "parameter": [*range(21), 1, 2, 3, 1, 2, 3],
            "value": [*(0.9**n for n in range(21)), 0.34, 0.33, 0.33, 0.001, 0.002, 0.01],
        }
    )
    tables.write_atomic(data / "summary.parquet", summary.to_arrow())
    states = pl.read_parquet(data / "states.parquet")
    two = pl.DataFrame(
        {
            "variant": ["two-player"] * 46,
            "state_id": [s * 512 + 511 for s in range(46)],
            "tiles": ["123456789"] * 46,
            "n_open": [9] * 46,
            "p1_score": list(range(46)),
            "player": [2] * 46,
            "value": [min(1.0, s / 45) for s in range(46)],
        }
    )
    merged = pl.concat([states, two], how="diagonal_relaxed")
    tables.write_atomic(data / "states.parquet", merged.to_arrow())


@pytest.fixture(scope="module")
def full_report(built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    data = tmp_path_factory.mktemp("report-data")
    for name in ("states", "policy"):
        shutil.copy(built / f"{name}.parquet", data)
    add_synthetic_tables(data)
    out = tmp_path_factory.mktemp("report") / "report"
    return out, build_report(data, out)


def test_every_chart_is_a_real_png(full_report) -> None:
    out, report = full_report
    names = sorted(p.name for p in report.charts)
    assert names == sorted(
        [
            "opening_rolls.png",
            "pshut_grid.png",
            "strategies.png",
            "double_shutter_pn.png",
            "two_player_p2.png",
            "seat_payoffs.png",
            "knucklebones.png",
        ]
    ), report.skipped
    for path in report.charts:
        assert path.parent == out and path.exists()
        assert_real_png(path)
    assert not list(out.glob(".*.tmp")), "no temporary file left behind"


def test_the_page_embeds_every_chart_and_the_numbers(full_report) -> None:
    out, report = full_report
    page = (out / PAGE).read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert page.count("data:image/png;base64,") == len(report.charts)
    for path in report.charts:
        assert f'href="{path.name}"' in page
    # seed 000_9b8fddd618491a4c.txt: roll 9 -> 0.10150185360563307; best state 124 -> 0.18209876...
    assert "10.1502" in page and "18.2099" in page
    assert "<script" not in page and "http" not in page, "self-contained: nothing fetched"


def test_missing_tables_are_skipped_with_a_note(cli, tmp_path: Path) -> None:
    # A build without the classic variant or any other issue's table: every chart is skipped.
    data = tmp_path / "data"
    assert cli(["build", "--variant", "six-tiles-one-die", "-d", data]).code == 0
    for path in data.glob("*.parquet"):  # as if no other issue's table were built
        if path.stem not in ("states", "edges", "policy", "moves"):
            path.unlink()
    result = cli(["report", "--out", tmp_path / "r", "-d", data])
    assert result.code == 0, result.stderr
    assert not list((tmp_path / "r").glob("*.png"))
    page = (tmp_path / "r" / PAGE).read_text()
    assert "six-tiles-one-die" in page, "the variants table lists what is built"
    assert "Not in this build" in page and "benchmarks.parquet is not built" in page
    assert "variant classic is not in" in page and "summary.parquet is not built" in page
    assert "skipped: Strategy comparison" in result.stdout


def test_report_without_tables_is_one_line_exit_2(cli, tmp_path: Path) -> None:
    result = cli(["report", "--out", tmp_path / "r", "-d", tmp_path / "none"])
    assert result.code == 2
    assert "stb-pipeline build" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r" / PAGE).exists()
