"""The dataset card (README.md) of a dataset written by `export dataset`, from its index.

A YAML header that the Hugging Face ``datasets`` library reads (a config per table and variant,
``<table>-<variant>``, and per table, ``<table>``: every variant), then for people: what the
dataset holds and which version wrote it, how to load it (examples that run from the dataset's
folder), every table's columns with their types and meanings, each variant's rules and
published figures beside the tables' own, and every file's rows and sha256.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pipeline.store.sources import DATASET_INDEX as INDEX
from pipeline.store.sources import DATASET_SUMS as SUMS

#: The table and variant whose config the `datasets` library loads when none is named.
DEFAULT_CONFIG = ("policy", "classic")


def config_name(table: str, variant: str | None) -> str:
    """The `datasets` config of one table's files of ``variant`` (None: every variant)."""
    return table if variant is None else f"{table}-{variant}"


def render_card(index: dict[str, Any]) -> str:
    """The dataset card (README.md) of ``index``."""
    return "\n".join(
        [
            *_yaml_header(index),
            *_card_intro(index),
            *_card_loading(index),
            *_card_tables(index),
            *_card_variants(index),
            *_card_files(index),
        ]
    )


def _yaml_header(index: dict[str, Any]) -> list[str]:
    """The YAML header: pretty_name and one config per table and variant (and per table)."""
    q = json.dumps  # a JSON string is a YAML string
    default = _default_config(index)
    lines = ["---", f"pretty_name: {q('Shut the Box family dice games, solved exactly')}"]
    lines += ["tags:", "- games", "- dynamic-programming", "- dice", "configs:"]
    for table, info in index["tables"].items():
        configs = [(config_name(table, None), f"{table}/*.parquet")]
        configs += [(config_name(table, v), f["path"]) for v, f in info["files"].items()]
        for name, path in configs:
            lines += [f"- config_name: {q(name)}", "  data_files:"]
            lines += ["  - split: train", f"    path: {q(path)}"]
            if name == default:
                lines.append("  default: true")
    return [*lines, "---", ""]


def _default_config(index: dict[str, Any]) -> str:
    """The config loaded when none is named: the classic box's policy when exported, else the
    first table and variant."""
    table, variant = DEFAULT_CONFIG
    if variant in index["tables"].get(table, {}).get("files", {}):
        return config_name(table, variant)
    first = next(iter(index["tables"]))
    return config_name(first, next(iter(index["tables"][first]["files"])))


def _example(index: dict[str, Any]) -> tuple[str, str, int]:
    """The table, variant and rows the loading examples use (those of the default config)."""
    name = _default_config(index)
    table, _, variant = name.partition("-")
    return table, variant, index["tables"][table]["files"][variant]["rows"]


def _card_intro(index: dict[str, Any]) -> list[str]:
    """The title and what the dataset holds."""
    writer = index["written_by"]
    rows = sum(f["rows"] for t in index["tables"].values() for f in t["files"].values())
    files = sum(len(t["files"]) for t in index["tables"].values())
    return [
        "# Shut the Box family dice games, solved exactly",
        "",
        "Exact values and optimal moves of dice games (Shut the Box and its variants, Double "
        "Shutter, Shut the Box for two to six players, Knucklebones), computed by dynamic "
        "programming over every position with stb-pipeline. Each table is a folder with one "
        "Parquet file per variant; every file of a table has the same columns, null where a "
        "column does not apply to a game.",
        "",
        f"{len(index['variants'])} variants, {len(index['tables'])} tables, {files} files, "
        f"{rows:,} rows. Written by stb-pipeline {writer['package_version']} (code hash "
        f"`{writer['code_hash'][:12]}`); `{INDEX}` says the same for programs, and `{SUMS}` "
        f"holds the sha256 of every file (`sha256sum -c {SUMS}`; `stb-pipeline verify -d "
        "FOLDER` checks the hashes, the columns, the published figures and the data "
        "contracts).",
        "",
    ]


def _card_loading(index: dict[str, Any]) -> list[str]:
    """How to load the tables, as examples that run from the dataset's folder."""
    table, variant, rows = _example(index)
    config = config_name(table, variant)
    states = sum(f["rows"] for f in index["tables"].get("states", {}).get("files", {}).values())
    lines = [
        "## Loading",
        "",
        f"From this folder. A table is `<table>/*.parquet`; the config `{table}` of the "
        f"`datasets` library is every variant's rows, `{config}` one variant's (`<table>-"
        "<variant>` for each table and variant).",
        "",
        "```bash",
        f"duckdb -c \"select * from '{table}/*.parquet' where variant = '{variant}' limit 5\"",
        "```",
        "",
        "```python",
        ">>> import polars as pl",
        f">>> frame = pl.scan_parquet({table!r} + '/*.parquet')",
        f">>> frame.filter(pl.col('variant') == {variant!r}).select(pl.len()).collect().item()",
        f"{rows}",
        ">>> import pyarrow.dataset as ds",
    ]
    if states:
        lines += [">>> ds.dataset('states', format='parquet').count_rows()", f"{states}"]
    lines += [
        ">>> import os",
        ">>> from datasets import load_dataset  # it wants the folder's path, not '.'",
        f">>> load_dataset(os.path.abspath('.'), {config!r}, split='train').num_rows",
        f"{rows}",
        "```",
        "",
    ]
    return lines


def _card_tables(index: dict[str, Any]) -> list[str]:
    """Each table: what a row is, and every column's type and meaning."""
    lines = [
        "## Tables",
        "",
        "The meanings below are those of the tables as stb-pipeline stores them. Where one says "
        "a column is null in the files of boxes of 13 tiles or more, or left to the reader, "
        "this dataset has it filled in: tiles and moves as the other boxes write them, `kind` "
        "everywhere.",
        "",
    ]
    for table, info in index["tables"].items():
        lines += [f"### {table}", "", f"One row: {info['grain'] or 'see the columns'}.", ""]
        lines += ["| column | type | meaning |", "| --- | --- | --- |"]
        lines += [
            f"| `{c['name']}` | {c['type']} | {_cell(c['meaning'])} |" for c in info["columns"]
        ]
        lines.append("")
    return lines


def _card_variants(index: dict[str, Any]) -> list[str]:
    """Each variant: its description, rules, rows per table and published figures."""
    lines = ["## Variants", ""]
    for name, info in index["variants"].items():
        held = [
            f"{t} ({files[name]['rows']:,} rows)"
            for t, files in ((t, i["files"]) for t, i in index["tables"].items())
            if name in files
        ]
        built = info["built_by"]
        lines += [f"### {name}", "", f"{_cell(info['description'])}.", ""]
        lines.append(f"Tables: {', '.join(held)}.")
        if built.get("package_version"):
            code = (built.get("code_hash") or "")[:12]
            lines.append(f"Built by stb-pipeline {built['package_version']} (code hash `{code}`).")
        lines += ["", f"Rules: `{json.dumps(info['rules'], sort_keys=True)}`", ""]
        if info["published"]:
            lines += ["| figure | published | source | these tables | agree |"]
            lines.append("| --- | --- | --- | --- | --- |")
            for f in info["published"]:
                ours = "missing" if f["ours"] is None else f"{f['ours']:.12g}"
                lines.append(
                    f"| {f['what']} | {f['published']} | {f['source']} | {ours} | "
                    f"{'yes' if f['agrees'] else 'NO'} (within {f['tolerance']:g}) |"
                )
            lines.append("")
    return lines


def _card_files(index: dict[str, Any]) -> list[str]:
    """Every table file, its rows and sha256."""
    files = [f for info in index["tables"].values() for f in info["files"].values()]
    rows = [f"| `{f['path']}` | {f['rows']:,} | `{f['sha256']}` |" for f in files]
    return ["## Files", "", "| file | rows | sha256 |", "| --- | --- | --- |", *rows, ""]


def _cell(text: str) -> str:
    """Text for a Markdown table cell (no pipes, no line breaks)."""
    return re.sub(r"\s+", " ", text.replace("|", "/")).strip()
