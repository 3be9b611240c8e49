"""The report: one self-contained HTML page and a PNG per chart, drawn from the built tables.

Each section is a function that returns a :class:`Section` (its chart, explanation and an HTML
table) or raises :class:`Skip` naming the table it needs; skipped sections appear on the page as a
note. Charts are drawn with matplotlib's Agg backend (no display needed). Every file is written
atomically; the page embeds its charts, so it can be moved or mailed alone.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: render to files, never to a display

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline import progress
from pipeline._version import __version__
from pipeline.analysis import sql
from pipeline.errors import PipelineError, TablesMissingError, UsageError
from pipeline.games.registry import Variant, lookup
from pipeline.store import directory, layout, tables
from pipeline.store.files import write_bytes_atomic
from pipeline.store.outputs import check_output_folder, inside, make_dir, refuse_data_files

PAGE = "index.html"
DPI = 110


class Skip(Exception):
    """A section cannot be drawn from this build; the message says what is missing."""


@dataclass
class Section:
    """One part of the report: a title, an explanation, a chart and an optional HTML table."""

    key: str
    title: str
    text: str
    figure: Figure | None = None
    table_html: str = ""
    png: bytes = b""


@dataclass
class Report:
    """What `stb-pipeline report` produced."""

    out_dir: Path
    page: Path
    charts: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


class Tables:
    """The data directory's tables, each read once (None when not built)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._cache: dict[str, pl.DataFrame | None] = {}

    def get(self, name: str) -> pl.DataFrame | None:
        """Table ``name``, or None when it does not exist."""
        if name not in self._cache:
            path = tables.table_path(self.data_dir, name)
            self._cache[name] = tables.read_table(self.data_dir, name) if path.exists() else None
        return self._cache[name]

    def need(self, name: str, variant: str | None = None, why: str = "") -> pl.DataFrame:
        """Table ``name`` (only ``variant``'s rows when given), or Skip saying how to build it."""
        frame = self.get(name)
        if frame is None:
            raise Skip(f"{name}.parquet is not built{why}")
        if variant is not None:
            frame = frame.filter(pl.col("variant") == variant)
            if frame.height == 0:
                raise Skip(
                    f"variant {variant} is not in {name}.parquet "
                    f"(stb-pipeline build --variant {variant}){why}"
                )
        return frame


# -- sections ---------------------------------------------------------------------------------


def opening_rolls(t: Tables) -> Section:
    """Value after the best first move, for each roll of the classic game (the
    Scala simulator's table)."""
    t.need("policy", "classic")
    start = t.need("states", "classic").filter(pl.col("n_open") == pl.col("n_open").max())
    start_value = float(start["value"][0])
    rows = sql.run_query("best_opening_roll", t.data_dir, variant="classic").sort("roll")
    fig, ax = plt.subplots(figsize=(9, 4.8))
    rolls, values = rows["roll"].to_list(), rows["value_after"].to_list()
    colours = ["#2b8cbe" if v >= start_value else "#bdbdbd" for v in values]
    ax.bar(rolls, [v * 100 for v in values], color=colours)
    for roll, value, move in zip(rolls, values, rows["best_move"].to_list(), strict=True):
        label = "shut " + "+".join(str(m) for m in move)
        ax.annotate(label, (roll, value * 100), ha="center", va="bottom", fontsize=8)
    ax.axhline(start_value * 100, color="#d95f02", linestyle="--", linewidth=1)
    ax.text(
        1.6,
        start_value * 100,
        f" before rolling: {start_value:.3%}",
        va="bottom",
        color="#d95f02",
        fontsize=9,
    )
    ax.set_xticks(rolls)
    ax.set_xlabel("first roll (two dice)")
    ax.set_ylabel("P(shut the box) after the best move, %")
    ax.set_title("Classic Shut the Box: your chance after the first roll, playing it best")
    ax.margins(y=0.12)
    table = _html_table(
        rows.sort("value_after", descending=True).select(
            "roll",
            pl.col("best_move").cast(pl.List(pl.String)).list.join(" + ").alias("best move"),
            (pl.col("value_after") * 100).round(4).alias("P(shut) after, %"),
        )
    )
    text = (
        f"Blue bars beat the chance before rolling ({start_value:.4%}): only those first rolls "
        "improve your odds. From `stb-pipeline query best_opening_roll`."
    )
    return Section("opening_rolls", "Best first move for each roll", text, fig, table)


def pshut_grid(t: Tables) -> Section:
    """P(shut) of every classic state, grouped by number of open tiles (rows) and open sum."""
    states = t.need("states", "classic").filter(~pl.col("terminal"))
    states = states.sort(
        ["n_open", "open_sum", "value", "tiles"], descending=[False, False, True, False]
    )
    fig = _grid_figure(_grid_rows(states), _top_value(states["value"]))
    fig.suptitle(
        "Classic Shut the Box: P(shut) from every position (open tiles, chance), "
        "by number of open tiles and their sum; best first in each cell",
        fontsize=10,
    )
    best = (
        states.sort("value", descending=True)
        .head(10)
        .select("tiles", (pl.col("value") * 100).round(4).alias("P(shut), %"))
    )
    text = (
        "Find your open tiles: the row is how many are open, the column their sum. Within a "
        "cell, positions are ranked best first; brighter is better. The ten best positions "
        "short of a shut box are listed below (the Scala simulator lists the same ten)."
    )
    return Section("pshut_grid", "P(shut) for every classic position", text, fig, _html_table(best))


#: A cell of the P(shut) grid: open sum, then the tiles and value of each position, best first.
GridCell = tuple[int, list[str], list[float]]


def _grid_rows(states: pl.DataFrame) -> dict[int, list[GridCell]]:
    """The grid's cells by number of open tiles, in the order of the (sorted) states."""
    cells = states.group_by("n_open", "open_sum", maintain_order=True).agg("tiles", "value")
    rows: dict[int, list[GridCell]] = {}
    for n, total, tiles_, values in cells.iter_rows():
        rows.setdefault(n, []).append((total, tiles_, values))
    return rows


def _top_value(values: pl.Series) -> float:
    """The top of the colour scale: the largest value (1 when none or 0), at least 1e-9."""
    top = values.max()
    return max(top if isinstance(top, float) and top else 1.0, 1e-9)


def _grid_figure(rows: dict[int, list[GridCell]], top: float) -> Figure:
    """The grid: a band per number of open tiles, a column per open sum, a box per position."""
    width = max(len(r) for r in rows.values())
    heights = {n: 1 + max(len(c[1]) for c in r) for n, r in rows.items()}
    total_h = sum(heights.values())
    fig = plt.figure(figsize=(1.25 * width + 0.8, 0.17 * total_h + 1.0))
    ax = fig.add_axes((0.04, 0.01, 0.95, 1 - 0.9 / (0.17 * total_h + 1.0)))
    cmap = plt.get_cmap("viridis")
    y = 0.0
    for n in sorted(rows):
        ax.text(
            -0.1, -(y + 0.5), f"{n} open", ha="right", va="center", fontsize=8, fontweight="bold"
        )
        for col, cell in enumerate(rows[n]):
            _draw_cell(ax, col, y, cell, cmap, top)
        y += heights[n]
        ax.axhline(-y, color="#888888", linewidth=0.5)
    ax.set_xlim(-0.9, width)
    ax.set_ylim(-y, 0)
    ax.axis("off")
    return fig


def _draw_cell(ax: Axes, col: int, y: float, cell: GridCell, cmap: Colormap, top: float) -> None:
    """One cell of the grid, its top at ``-y``: the open sum, then a shaded box per position."""
    total, tiles_, values = cell
    ax.text(
        col + 0.5,
        -(y + 0.5),
        f"sum {total}",
        ha="center",
        va="center",
        fontsize=7,
        fontweight="bold",
    )
    for k, (tl, v) in enumerate(zip(tiles_, values, strict=True)):
        yy = y + 1 + k
        shade = cmap(math.sqrt(v / top))
        ax.add_patch(Rectangle((col + 0.03, -(yy + 1) + 0.05), 0.94, 0.9, color=shade))
        ink = "black" if sum(shade[:3]) > 1.5 else "white"
        # one monospace text per position: drawing text is what takes the time
        ax.text(
            col + 0.07,
            -(yy + 0.5),
            f"{tl:<9}{v:>7.2%}",
            va="center",
            fontsize=6.5,
            color=ink,
            family="monospace",
        )


def strategy_comparison(t: Tables) -> Section:
    """Exact win rates of each strategy, with simulation confidence intervals."""
    bench = t.need("benchmarks", why=" (stb-pipeline build writes its exact rows)")
    variant = "classic" if "classic" in bench["variant"].to_list() else bench["variant"][0]
    rows = bench.filter(pl.col("variant") == variant)
    exact = _rows_by_strategy(rows, "exact")
    sim = _rows_by_strategy(rows, "simulation")
    order = sorted(
        sorted(set(rows["strategy"].to_list())),
        key=lambda s: -(exact.get(s) or sim.get(s) or {}).get("win_rate", 0),
    )
    fig = _strategy_chart(str(variant), order, exact, sim)
    keep = ("strategy", "method", "games", "win_rate", "ci_low", "ci_high", "seed")
    table = _html_table(
        rows.select([c for c in keep if c in rows.columns]).sort("strategy", "method")
    )
    parts = [
        ("bars: exact win rates", exact),
        ("dots and whiskers: Monte Carlo estimates with their 95% intervals", sim),
    ]
    said = "; ".join(words for words, present in parts if present)
    text = said[:1].upper() + said[1:] + "."
    return Section("strategies", "Strategy comparison", text, fig, table)


def _rows_by_strategy(rows: pl.DataFrame, method: str) -> dict[str, dict[str, Any]]:
    """The benchmark rows of one method (exact, simulation), by strategy."""
    return {r["strategy"]: r for r in rows.filter(pl.col("method") == method).iter_rows(named=True)}


def _strategy_chart(
    variant: str,
    order: list[str],
    exact: dict[str, dict[str, Any]],
    sim: dict[str, dict[str, Any]],
) -> Figure:
    """Horizontal bars of the exact win rates, with each simulation's interval over its bar."""
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(order) + 1.8))
    ys = range(len(order))
    ax.barh(
        list(ys),
        [100 * (exact[s]["win_rate"] if s in exact else float("nan")) for s in order],
        color="#2b8cbe",
        label="exact",
    )
    for i, s in enumerate(order):
        if s in exact:
            rate = 100 * exact[s]["win_rate"]
            ax.text(rate, i, f" {rate:.3f}%", va="center", fontsize=8)
        if s in sim:  # the legend names the intervals once
            _interval(ax, i, sim[s], labelled=s == next(x for x in order if x in sim))
    ax.set_yticks(list(ys), order)
    ax.invert_yaxis()
    ax.set_xlabel("win rate, %")
    # what the chart draws: the exact win rates (bars) and the simulations' intervals (dots
    # and whiskers), each only when there are rows of it
    shown = [("exact win rate", exact), ("simulated interval", sim)]
    ax.set_title(f"Strategies on {variant}: {' and '.join(w for w, rows in shown if rows)}")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    ax.legend(unique.values(), unique.keys(), loc="lower right")
    return fig


def _interval(ax: Axes, i: int, r: dict[str, Any], labelled: bool) -> None:
    """A simulation's estimate and 95% interval as a dot with whiskers on bar ``i``."""
    ax.errorbar(
        100 * r["win_rate"],
        i,
        xerr=[
            [100 * (r["win_rate"] - r["ci_low"])],
            [100 * (r["ci_high"] - r["win_rate"])],
        ],
        fmt="o",
        color="#d95f02",
        capsize=4,
        label="simulation (95% Wilson interval)" if labelled else None,
    )


def rule_card(t: Tables) -> Section:
    """The rules a person can remember (strategy_card) and the value with n exceptions learnt
    on top of the best one (strategy_exceptions), for classic where searched."""
    search = t.need("strategy_search", why=" (stb-pipeline build, or stb-pipeline strategies)")
    found = search["variant"].unique().sort().to_list()
    variant = "classic" if "classic" in found else found[0]
    card = sql.run_query("strategy_card", t.data_dir, variant=variant)
    curve = sql.run_query("strategy_exceptions", t.data_dir, variant=variant)
    objective = str(search.filter(pl.col("variant") == variant)["objective"][0])
    percent = objective != "score"
    scale = 100.0 if percent else 1.0
    fig, ax = plt.subplots(figsize=(9, 4.8))
    label = f"best rule ({curve['spec'][0]}) + n exceptions"
    ax.plot(curve["n"], curve["value"] * scale, marker="o", markersize=3, label=label)
    lines = [("optimal play", "#d95f02", "--"), ("best rule of at most 1 key", "#7570b3", "--")]
    named = card.filter(pl.col("line").str.starts_with("named") & (pl.col("spec") != "optimal"))
    if named.height:
        lines.append((str(named["line"][0]), "#999999", ":"))
    for line, colour, style in lines:
        value = float(card.filter(pl.col("line") == line)["value"][0])
        text = f"{line}: {value:.3%}" if percent else f"{line}: {value:.3f}"
        ax.axhline(value * scale, color=colour, linestyle=style, linewidth=1, label=text)
    ax.set_xlabel("exceptions learnt (each the one that pays most, recomputed exactly)")
    ax.set_ylabel("P(shut the box), %" if percent else f"expected final score ({objective})")
    ax.set_title(f"{variant}: a simple rule, and the exceptions worth learning")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    unit = "P(shut), %" if percent else "value"
    shown = card.select(
        "line",
        "rule",
        "exceptions",
        (pl.col("value") * scale).round(4).alias(unit),
        (pl.col("gap") * scale).round(4).alias("lost, points" if percent else "lost"),
    )
    gain = (pl.col("gain") * scale).round(5).alias("gain, points" if percent else "gain")
    top = curve.filter(pl.col("n").is_between(1, 10)).select("n", "exception", gain)
    text = (
        "Every rule of up to three move keys (and, where the rules offer one die, a one-die "
        "threshold) is priced exactly; the card shows the best of each size beside optimal play "
        "and the named strategies, and the curve what learning exceptions to the best rule "
        "brings. `stb-pipeline query strategy_card` and `stb-pipeline query strategy_exceptions` "
        "give the same numbers; the first ten exceptions are listed below the card."
    )
    tables_html = _html_table(shown) + _html_table(top)
    return Section("rule_card", "Rules a person can remember", text, fig, tables_html)


def double_shutter_pn(t: Tables) -> Section:
    """Double Shutter p(n) = P(final score > n) playing to maximise P(score <= n), as in the
    Double Shutter article."""
    summary = t.need("summary", why=" (stb-pipeline build --variant double-shutter)")
    if "figure" not in summary.columns:
        raise Skip("summary.parquet has no figure column")
    rows = summary.filter(pl.col("figure") == "p_above").sort("variant", "parameter")
    if rows.height == 0:
        raise Skip("summary.parquet has no p(n) rows (figure p_above)")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for (variant,), part in rows.group_by("variant", maintain_order=True):
        ax.plot(part["parameter"], part["value"], marker="o", label=str(variant))
    ax.set_xlabel("n (target score)")
    ax.set_ylabel("p(n) = P(final score > n)")
    ax.set_title("Double Shutter: p(n), playing to finish with n or less")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.grid(alpha=0.3)
    table = _html_table(rows.select("variant", pl.col("parameter").alias("n"), "value"))
    text = "From summary.parquet; `stb-pipeline query double_shutter_p_of_n` lists the same."
    return Section("double_shutter_pn", "Double Shutter p(n)", text, fig, table)


def two_player_curve(t: Tables) -> Section:
    """Player 2's winning chance at the start of their turn, against player 1's final score."""
    states = t.need("states", "two-player")
    if "p1_score" not in states.columns:
        raise Skip("two-player states have no p1_score column")
    p2 = states.filter(pl.col("p1_score").is_not_null())
    if "player" in states.columns:
        p2 = p2.filter(pl.col("player") == 2)
    start = p2.filter(pl.col("n_open") == pl.col("n_open").max()).sort("p1_score")
    if start.height == 0:
        raise Skip("no player-2 start states in the two-player table")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot(start["p1_score"], start["value"], marker="o", markersize=3)
    ax.set_xlabel("player 1's final score")
    ax.set_ylabel("player 2's expected wins (a tie counts 1/2)")
    ax.set_title("Two players: player 2's chance against player 1's score")
    ax.grid(alpha=0.3)
    text = (
        "Each point is player 2's state with every tile open after player 1 finished on that "
        "score; `stb-pipeline query two_player_p2_curve` gives the same numbers where built."
    )
    table = _html_table(start.select("p1_score", "value"))
    return Section("two_player_p2", "Two players: player 2's chance", text, fig, table)


def seat_payoffs(t: Tables) -> Section:
    """Games of several players in turn: each seat's expected payoff at the start, beside an
    even split, and what maximising P(shut) instead costs (the summary's figures)."""
    summary = t.need("summary", why=" (stb-pipeline build --variant three-player,four-player)")
    if "figure" not in summary.columns:
        raise Skip("summary.parquet has no figure column")
    wide = (
        summary.filter(
            pl.col("figure").is_in(["expected_payoff", "loss_shut_chaser"])
            & pl.col("parameter").is_not_null()
        )
        .pivot("figure", index=["variant", "parameter"], values="value")
        .sort("variant", "parameter")
    )
    if wide.height == 0 or "expected_payoff" not in wide.columns:
        raise Skip("no per-seat payoffs in summary.parquet (figure expected_payoff)")
    wide = wide.with_columns(
        fair=pl.col("expected_payoff").mean().over("variant"),
    ).with_columns(edge=pl.col("expected_payoff") - pl.col("fair"))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for (variant,), part in wide.group_by("variant", maintain_order=True):
        ax.plot(part["parameter"], part["edge"], marker="o", label=str(variant))
    ax.axhline(0, color="grey", linewidth=0.8)
    seats = sorted({int(x) for x in wide["parameter"].to_list()})
    ax.set_xticks(seats)  # seats are whole numbers: one tick each, never 1.5
    ax.set_xlabel("seat (order of play)")
    ax.set_ylabel("expected payoff - even split")
    ax.set_title("Players in turn: who is favoured by seat")
    ax.legend()
    ax.grid(alpha=0.3)
    text = (
        "Each seat's expected share of the win (or winnings, for stakes) under optimal play, "
        "less an even split; loss_shut_chaser is what that seat gives away by maximising "
        "P(shut) instead. `stb-pipeline query nplayer_seats` gives the same numbers."
    )
    table = _html_table(wide.rename({"parameter": "seat"}))
    return Section("seat_payoffs", "Players in turn: payoff by seat", text, fig, table)


def knucklebones(t: Tables) -> Section:
    """Knucklebones: the strategies' win rates where benchmarked, else the solved variants."""
    states = t.need("states")
    built = start_values(states.filter(pl.col("variant").str.starts_with("knucklebones")))
    bench = t.get("benchmarks")
    rows = (
        bench.filter(pl.col("variant").str.starts_with("knucklebones"))
        if bench is not None
        else pl.DataFrame()
    )
    if rows.height == 0:
        if built.height == 0:
            raise Skip(
                "no knucklebones variant is built (stb-pipeline build --variant knucklebones-2x2)"
            )
        text = "Solved Knucklebones variants (no benchmark rows in benchmarks.parquet)."
        return Section("knucklebones", "Knucklebones", text, None, _html_table(built))
    labels = [
        f"{v} / {s} ({m})" for v, s, m in rows.select("variant", "strategy", "method").iter_rows()
    ]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(labels) + 1.5))
    ax.barh(range(len(labels)), [100 * w for w in rows["win_rate"]], color="#66a61e")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("win rate, %")
    ax.set_title("Knucklebones: strategies' win rates")
    keep = ("variant", "strategy", "method", "games", "win_rate", "ci_low", "ci_high")
    shown = rows.select([c for c in keep if c in rows.columns])
    text = "Benchmark rows of the Knucklebones variants; solved variants below."
    tables_html = _html_table(shown) + _html_table(built)
    return Section("knucklebones", "Knucklebones", text, fig, tables_html)


def variants_summary(t: Tables) -> Section:
    """Every variant built: number of states, objective and the value at the start."""
    summary = start_values(t.need("states"), directory.of(t.data_dir).snapshot().customs())
    return Section("variants", "Variants in this build", "", None, _html_table(summary))


def start_values(states: pl.DataFrame, built: Mapping[str, Variant] | None = None) -> pl.DataFrame:
    """Per variant: states, objective and the value of its start state (the variant from the
    registry, by its rules' name, or from ``built``: custom variants built in the data
    directory)."""
    rows = []
    for (variant,), part in states.group_by("variant", maintain_order=True):
        start = None
        try:
            found: Variant | None = lookup(str(variant), built or {})
        except PipelineError:  # nothing names it any more
            found = None
        if found is not None:
            sid = found.make().start_state()
            hit = part.filter(pl.col("state_id") == sid)
            start = hit["value"][0] if hit.height else None
        rows.append((variant, part.height, part["objective"][0], start))
    schema = {
        "variant": pl.String,
        "states": pl.Int64,
        "objective": pl.String,
        "value_at_start": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("variant")


#: The report's sections in page order, with the title used when one is skipped.
SECTIONS: list[tuple[str, Callable[[Tables], Section]]] = [
    ("Variants in this build", variants_summary),
    ("Best first move for each roll", opening_rolls),
    ("P(shut) for every classic position", pshut_grid),
    ("Strategy comparison", strategy_comparison),
    ("Rules a person can remember", rule_card),
    ("Double Shutter p(n)", double_shutter_pn),
    ("Two players: player 2's chance", two_player_curve),
    ("Players in turn: payoff by seat", seat_payoffs),
    ("Knucklebones", knucklebones),
]


# -- page -------------------------------------------------------------------------------------


def build_report(data_dir: Path, out_dir: Path) -> Report:
    """Draw every section that this build supports and write the page and its charts."""
    t = Tables(data_dir)
    if t.get("states") is None:
        raise TablesMissingError(
            f"{tables.table_path(data_dir, 'states')} does not exist: "
            "run `stb-pipeline build --variant all` first"
        )
    # A folder of its own inside the data directory (data/report) is fine: the report writes
    # only index.html and PNG charts. The data directory itself, or a variant's folder, is not.
    out, data = Path(out_dir), Path(data_dir)
    if inside(data, out) or inside(out, data / layout.OWN_DIR):
        raise UsageError(
            f"--out {out_dir} would mix the report with the tables of {data_dir}: give a folder "
            f"of its own, e.g. {data_dir}/report"
        )
    refuse_data_files(out, data, "--out")  # data/x.parquet would be read as a table
    check_output_folder(out, "--out")
    report = Report(Path(out_dir), Path(out_dir) / PAGE)
    make_dir(report.out_dir)
    done: list[Section] = []
    with progress.task("report", total=len(SECTIONS), unit="sections") as job:
        for title, make in SECTIONS:
            job.update(note=title)
            section = _section(t, title, make, report)
            if section is not None:
                done.append(section)
            job.advance()
    write_bytes_atomic(report.page, _page(done, report.skipped, data_dir).encode())
    return report


def _section(
    t: Tables, title: str, make: Callable[[Tables], Section], report: Report
) -> Section | None:
    """One section drawn and its chart written; None (and a note in the report) when skipped."""
    try:
        section = make(t)
    except (Skip, PipelineError) as why:
        report.skipped.append((title, str(why)))
        return None
    if section.figure is not None:
        section.png = _png(section.figure)
        path = report.out_dir / f"{section.key}.png"
        write_bytes_atomic(path, section.png)
        report.charts.append(path)
    return section


def _png(fig: Figure) -> bytes:
    """The figure as PNG bytes (and the figure closed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _html_table(frame: pl.DataFrame) -> str:
    """A plain HTML table of a (small) frame."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = []
    for row in frame.iter_rows():
        cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f3f3f3; }
.note { color: #666; }
"""


def _page(sections: list[Section], skipped: list[tuple[str, str]], data_dir: Path) -> str:
    """The HTML page: every section with its chart embedded, then what was skipped."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>stb-pipeline report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Shut the Box, solved: the report</h1>",
        f'<p class="note">From the tables in {html.escape(str(data_dir))}, '
        f"stb-pipeline {__version__}, {stamp}.</p>",
    ]
    for s in sections:
        parts.append(f'<h2 id="{s.key}">{html.escape(s.title)}</h2>')
        if s.text:
            code = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(s.text))  # `code` spans
            parts.append(f"<p>{code}</p>")
        if s.png:
            data = base64.b64encode(s.png).decode()
            parts.append(
                f'<p><img alt="{html.escape(s.title)}" src="data:image/png;base64,{data}"></p>'
                f'<p class="note">Chart file: <a href="{s.key}.png">{s.key}.png</a></p>'
            )
        parts.append(s.table_html)
    if skipped:
        parts.append("<h2>Not in this build</h2><ul>")
        parts += [f"<li>{html.escape(title)}: {html.escape(why)}</li>" for title, why in skipped]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
