"""Documentation stays true: data/README.md is generated, and describes every column written."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pipeline.analysis.schema_docs import TABLES, render
from tests.conftest import REPO


def test_data_readme_is_generated_from_schema_docs() -> None:
    text = (REPO / "data" / "README.md").read_text()
    assert text == render(), "run: python -m pipeline.analysis.schema_docs > data/README.md"


def test_every_written_column_is_documented(built: Path) -> None:
    for path in sorted(built.glob("*.parquet")):
        name = path.stem
        assert name in TABLES, f"table {name} is not described in pipeline/schema_docs.py"
        documented = set(TABLES[name][1])
        missing = set(pq.read_schema(path).names) - documented
        assert not missing, f"{name}: undocumented columns {sorted(missing)}"
