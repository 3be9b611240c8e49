"""The report: every chart is a real PNG, the page embeds them, missing tables become notes."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import matplotlib.image as mpimg
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.container import ErrorbarContainer

from pipeline.analysis import report
from pipeline.analysis.report import PAGE, build_report  # sets the Agg backend first

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


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
    _write(data / "benchmarks.parquet", bench.to_arrow())
    summary = pl.DataFrame(
        {
            "variant": ["double-shutter"] * 21 + ["three-player"] * 6,
            "figure": ["p_above"] * 21 + ["expected_payoff"] * 3 + ["loss_shut_chaser"] * 3,
            "objective": ["target"] * 21 + ["wins"] * 6,
            "parameter": [*range(21), 1, 2, 3, 1, 2, 3],
            "value": [*(0.9**n for n in range(21)), 0.34, 0.33, 0.33, 0.001, 0.002, 0.01],
        }
    )
    _write(data / "summary.parquet", summary.to_arrow())
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
    _write(data / "states.parquet", merged.to_arrow())


@pytest.fixture(scope="module")
def report_data(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's states and policy with the synthetic tables of the other charts."""
    data = tmp_path_factory.mktemp("report-data")
    for name in ("states", "policy"):
        shutil.copy(built / f"{name}.parquet", data)
    add_synthetic_tables(data)
    return data


@pytest.fixture(scope="module")
def full_report(report_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("report") / "report"
    return out, build_report(report_data, out)


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


def test_seat_chart_ticks_are_whole_seats(report_data: Path) -> None:
    """Seats are whole numbers: one tick a seat (matplotlib's own would put ticks at 1.25)."""
    section = report.seat_payoffs(report.Tables(report_data))
    assert section.figure is not None
    ax = section.figure.axes[0]
    assert list(ax.get_xticks()) == [1, 2, 3]
    section.figure.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    report.plt.close(section.figure)


@pytest.mark.parametrize("methods", [("exact", "simulation"), ("exact",), ("simulation",)])
def test_strategy_chart_title_names_what_is_drawn(
    report_data: Path, tmp_path: Path, methods: tuple[str, ...]
) -> None:
    """Without simulation rows the title promises no interval (and no whisker is drawn);
    without exact rows, no exact bar."""
    data = tmp_path / "data"
    data.mkdir()
    bench = pl.read_parquet(report_data / "benchmarks.parquet")
    _write(data / "benchmarks.parquet", bench.filter(pl.col("method").is_in(methods)).to_arrow())
    section = report.strategy_comparison(report.Tables(data))
    assert section.figure is not None
    ax = section.figure.axes[0]
    title = ax.get_title()
    whiskers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    bars = [p for p in ax.patches if math.isfinite(p.get_width()) and p.get_width() > 0]
    assert ("simulated interval" in title) == ("simulation" in methods)
    assert ("whiskers: Monte Carlo" in section.text) == ("simulation" in methods)
    assert len(whiskers) == (3 if "simulation" in methods else 0)
    assert ("exact win rate" in title) == ("exact" in methods)
    assert len(bars) == (3 if "exact" in methods else 0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("interval" in t for t in legend) == ("simulation" in methods)
    report.plt.close(section.figure)
