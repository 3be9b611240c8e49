"""`stb-pipeline query`: run a named analysis query from `queries/` (or list them).

No `from __future__ import annotations` here: typer reads the annotations at run time, and
the shared option types come from `pipeline.cli.app` inside `register`.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.errors import UsageError

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Group
    from rich.table import Table


def parse_params(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings; the query's header declares each key's type (checked there)."""
    params: dict[str, str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--param {item!r}: write KEY=VALUE, e.g. --param strategy=greedy")
        if key in params:
            raise UsageError(f"--param {key} is given twice")
        params[key] = text
    return params


def pick_format(fmt: str | None, output: Path | None) -> str:
    """The output format: as given, else from the output file's suffix, else a table."""
    from pipeline.store import outputs

    if fmt is None:
        suffix = output.suffix.lstrip(".") if output is not None else "table"
        fmt = suffix if suffix in outputs.FORMATS else "table"
    if fmt not in outputs.FORMATS:
        raise UsageError(f"--format must be one of {', '.join(outputs.FORMATS)}, not {fmt!r}")
    if output is not None and fmt == "table":
        raise UsageError("--output needs --format csv or parquet (or a .csv/.parquet file name)")
    if output is None and fmt == "parquet":
        raise UsageError("--format parquet needs --output FILE")
    return fmt


def show_table(frame: "pl.DataFrame", title: str, width: int = 1000) -> "Table | Group":
    """A rich table of a query result (floats to 12 significant digits); when its columns do not
    fit in ``width`` side by side, one block of ``column  value`` lines per row instead (a
    narrow terminal gets every header whole, never squeezed)."""
    from rich.console import Group
    from rich.table import Table

    from pipeline.cli.options import fitted_table
    from pipeline.store import outputs

    names = list(frame.columns)
    rows = [
        ["" if v is None else f"{v:.12g}" if isinstance(v, float) else str(v) for v in row]
        for row in outputs.flatten_lists(frame).iter_rows()
    ]
    numeric = tuple(n for n, dtype in frame.schema.items() if dtype.is_numeric())
    cells = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    if sum(cells) + 3 * len(cells) + 1 <= width or not names:
        table = fitted_table(*names, right=numeric, title=title, title_justify="left")
        for row in rows:
            table.add_row(*row)
        return table
    # too wide: each row as its own two-column table, the long values folding
    blocks: list[Table] = []
    for n, row in enumerate(rows, 1):
        block = fitted_table(
            "column", "value", fold="value", title=f"{title}, row {n}", title_justify="left"
        )
        for name, value in zip(names, row, strict=True):
            block.add_row(name, value)
        blocks.append(block)
    return Group(*blocks) if blocks else Table(title=title, title_justify="left")


def register(app: typer.Typer) -> None:
    """Add the `query` command."""
    from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, ForceOutput, Quiet

    @app.command("query")
    def query_cmd(
        name: Annotated[
            str | None, typer.Argument(help="Query name (see --list), e.g. best_opening_roll.")
        ] = None,
        variant: Annotated[
            str | None, typer.Option("--variant", "-v", help="Variant the query is about.")
        ] = None,
        param: Annotated[
            list[str],
            typer.Option("--param", "-p", help="Another query variable, KEY=VALUE (repeatable)."),
        ] = [],  # noqa: B006  (typer needs a literal default)
        fmt: Annotated[
            str | None, typer.Option("--format", "-f", help="table, csv or parquet.")
        ] = None,
        output: Annotated[
            Path | None, typer.Option("--output", "-o", help="Write the result to this file.")
        ] = None,
        list_: Annotated[
            bool, typer.Option("--list", "-l", help="List the queries and what each answers.")
        ] = False,
        force: ForceOutput = False,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        quiet: Quiet = False,
    ) -> None:
        """Run an analysis query from queries/ on the tables, or list them with --list.

        Example: stb-pipeline query best_opening_roll --variant classic --format csv
        """
        if list_:
            print_list()
        else:
            answer(name, variant, param, fmt, output, force, data_dir)


def print_list() -> None:
    """`query --list`: every query and what it answers."""
    from pipeline.analysis import sql
    from pipeline.cli.options import fitted_table, listing_options, out

    table = fitted_table("query", "description", fold="description", **listing_options())
    for query, description in sql.list_queries():
        table.add_row(query, description)
    out.print(table)


def answer(
    name: str | None,
    variant: str | None,
    param: list[str],
    fmt: str | None,
    output: Path | None,
    force: bool,
    data_dir: Path,
) -> None:
    """`query NAME`: run the query and print its rows (a table or CSV) or write them to
    ``output``."""
    from pipeline.analysis import sql
    from pipeline.cli.options import out
    from pipeline.store import outputs

    if name is None:
        raise UsageError("name a query (stb-pipeline query --list shows them)")
    chosen = pick_format(fmt, output)
    params = parse_params(param)
    if variant is not None:
        if "variant" in params:
            raise UsageError("give the variant once: --variant or --param variant=...")
        params["variant"] = variant
    if output is not None:
        outputs.check_output(output, data_dir, force)
    try:
        import polars  # noqa: F401  (the tables are drawn from frames)
    except ModuleNotFoundError:  # a GPU machine: DuckDB and Arrow alone, the rows as CSV
        rows = sql.query_arrow(name, data_dir, **params)
        frame = None
    else:
        frame = rows = sql.run_query(name, data_dir, **params)
    if output is not None:
        outputs.export(rows, chosen, output)
        out.print(f"{len(rows)} rows written to {output}")
    elif frame is None:
        print(outputs.arrow_to_csv(rows), end="")
    elif chosen == "csv":
        print(outputs.to_csv(frame), end="")
    else:
        columns, fold = sql.shown(name)
        if columns and set(columns) <= set(frame.columns):
            print_card(frame, name, columns, fold)
        else:
            out.print(show_table(frame, f"{name} ({frame.height} rows)", out.width))


#: The widest a card is drawn, even on a pipe: its long column folds instead.
CARD_WIDTH = 160


def print_card(frame: "pl.DataFrame", name: str, columns: list[str], fold: tuple[str, ...]) -> None:
    """A query's card (its ``-- shows:`` columns, the ``fold`` ones folding onto more lines),
    numbers to 6 significant digits, and a line naming what `-f csv` adds."""
    from pipeline.cli.options import fitted_table, out

    numeric = tuple(c for c in columns if frame.schema[c].is_numeric())
    title = f"{name} ({frame.height} rows)"
    table = fitted_table(*columns, fold=fold, right=numeric, title=title, title_justify="left")
    for row in frame.select(columns).iter_rows():
        table.add_row(
            *("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v) for v in row)
        )
    out.print(table, width=min(out.width, CARD_WIDTH))
    rest = [c for c in frame.columns if c not in columns]
    if rest:
        out.print(f"every column ({', '.join(rest)} too): --format csv", soft_wrap=False)
