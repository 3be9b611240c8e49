"""One door to every table (issue 33): the catalog stb.duckdb through the real duckdb command,
polars (`pipeline.scan`) and pyarrow (`pipeline.dataset`) read the rows `stb-pipeline query`
reads, for every table and every kind of file; the catalog prunes what a filter excludes, is
rewritten atomically by every commit, and never blocks a reader."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import pipeline
from pipeline.analysis import sql
from pipeline.errors import TablesMissingError
from pipeline.games.tiles import TileCodec
from pipeline.store import catalog, layout, manifest, schema, sources
from tests.analysis.test_query import duckdb_binary
from tests.conftest import DOOR_VARIANTS, invoke

BOX = "stb-13t-2d6-score"


@functools.cache
def query_rows(data: Path, table: str) -> pl.DataFrame:
    """The rows of ``table`` that `stb-pipeline query` reads (its in-memory views), of the
    door variants."""
    con = sql.connect(data)
    try:
        query = f"select * from {table} where list_contains($v, variant)"
        return con.sql(query, params={"v": DOOR_VARIANTS}).pl()
    finally:
        con.close()


def canonical(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows in one order, so that two readers compare."""
    return frame.sort(frame.columns, nulls_last=True)


def assert_same_rows(got: pl.DataFrame, want: pl.DataFrame, what: str) -> None:
    """The same columns, types and rows (floats within 1e-12)."""
    assert got.columns == want.columns, f"{what}: columns {got.columns}"
    assert got.schema == want.schema, f"{what}: types {got.schema}"
    assert_frame_equal(canonical(got), canonical(want), check_exact=False, abs_tol=1e-12)


def tables_of(data: Path) -> list[str]:
    """The tables of a data directory."""
    return list(sources.data_files(data))


def test_the_doors_hold_every_kind_of_file(doors: Path) -> None:
    files = [f for fs in sources.data_files(doors).values() for f in fs]
    assert {f.variant for f in files if f.variant} == {"three-small", BOX}
    assert {f.table for f in files if f.tiles == 13} == {"states", "policy", "moves", "edges"}
    assert set(tables_of(doors)) >= {"states", "policy", "moves", "edges", "summary"}
    assert catalog.state(doors) == "current"


def test_every_table_through_the_duckdb_command_gives_the_rows_query_reads(
    doors: Path, tmp_path: Path
) -> None:
    """The catalog opened by the duckdb command from another working directory (`/`): every
    table's rows equal the query views', a big box's tile columns decoded."""
    wanted = ", ".join(f"'{v}'" for v in DOOR_VARIANTS)
    commands = []
    for table in tables_of(doors):
        rows = f"select * from {table} where variant in ({wanted})"
        commands += ["-c", f"copy ({rows}) to '{tmp_path}/{table}.parquet'"]
    run = subprocess.run(
        [duckdb_binary(), "-readonly", str(doors / "stb.duckdb"), *commands],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0 and not run.stderr, run.stderr
    for table in tables_of(doors):
        got = pl.read_parquet(tmp_path / f"{table}.parquet")
        assert_same_rows(got, query_rows(doors, table), f"duckdb {table}")
    box = pl.read_parquet(tmp_path / "policy.parquet").filter(pl.col("variant") == BOX)
    assert box["tiles"].null_count() == 0 and box["kind"].null_count() == 0


def test_every_table_through_polars_gives_the_rows_query_reads(doors: Path) -> None:
    for table in tables_of(doors):
        got = pipeline.scan(table, data_dir=doors).filter(pl.col("variant").is_in(DOOR_VARIANTS))
        assert_same_rows(got.collect(), query_rows(doors, table), f"polars {table}")
    one = pipeline.scan("policy", BOX, data_dir=doors).collect()
    assert set(one["variant"]) == {BOX} and one.height == 90_101


def test_every_table_through_pyarrow_gives_the_stored_rows(doors: Path) -> None:
    """pyarrow reads the files: the columns a big box leaves to the reader stay null there, the
    rest equal the query views' rows."""
    import pyarrow.dataset as ds

    for table in tables_of(doors):
        arrow = pipeline.dataset(table, data_dir=doors).to_table(
            filter=ds.field("variant").isin(DOOR_VARIANTS)
        )
        got = pl.from_arrow(arrow)
        assert isinstance(got, pl.DataFrame)
        want = query_rows(doors, table)
        left = list(schema.tile_select(table, want.columns, 13))  # decoded by the views only
        stored = pl.when(pl.col("variant") == BOX).then(None)
        want = want.with_columns(stored.otherwise(pl.col(c)).alias(c) for c in left)
        assert_same_rows(got, want, f"pyarrow {table}")
    assert pipeline.dataset("states", "three-small", data_dir=doors).count_rows() == 1280


def test_a_big_box_decodes_as_its_codec_does(doors: Path) -> None:
    """The views' tile texts and lists are the tile codec's (an independent implementation)."""
    codec = TileCodec(13)
    con = duckdb.connect(str(doors / "stb.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "select state_id, tiles, best_move, best_move_mask, next_state_id, next_tiles, kind "
            f"from policy where variant = '{BOX}' and state_id in (8191, 4097, 6) order by all"
        ).fetchall()
        states = con.execute(
            f"select state_id, tiles, open_tiles from states where variant = '{BOX}' "
            "and state_id in (0, 5, 8191) order by 1"
        ).fetchall()
    finally:
        con.close()
    assert rows
    for state, tiles, best, mask, nxt, next_tiles, kind in rows:
        assert tiles == codec.text(state) and "," in codec.text(8191)
        if mask is None:
            assert (best, nxt, next_tiles, kind) == (None, None, None, "end")
        else:
            assert best == codec.tiles(mask) and nxt == state ^ mask
            assert next_tiles == codec.text(nxt) and kind == "move"
    assert states == [(0, "", []), (5, "1,3", [1, 3]), (8191, codec.text(8191), list(range(1, 14)))]


def profile(database: Path, query: str, tmp_path: Path) -> dict:
    """DuckDB's JSON profile of one query on the catalog."""
    out = tmp_path / "profile.json"
    con = duckdb.connect(str(database), read_only=True)
    try:
        con.execute("pragma enable_profiling = 'json'")
        con.execute(f"pragma profiling_output = '{out}'")
        con.execute(query).fetchall()
        con.execute("pragma disable_profiling")
    finally:
        con.close()
    return json.loads(out.read_text())


def scans(node: dict) -> list[dict]:
    """The Parquet scans of a profile."""
    found = [node] if node.get("name") == "READ_PARQUET" else []
    for child in [*node.get("operator", []), *node.get("children", [])]:
        found += scans(child)
    return found


def test_a_filtered_lookup_reads_no_row_the_filter_excludes(doors: Path, tmp_path: Path) -> None:
    """EXPLAIN ANALYZE's profile: a variant stored on its own is read from its file alone (the
    others are planned away), a shared variant from its own row groups."""
    database = doors / "stb.duckdb"
    lookup = f"select * from policy where variant = '{BOX}' and state_id = 8191"
    found = scans(profile(database, lookup, tmp_path))
    names = {s["extra_info"]["Filename(s)"] for s in found}
    assert names == {
        str(doors / "policy.parquet"),
        str(doors / "variants" / BOX / "policy.parquet"),
    }
    shared = next(
        s for s in found if s["extra_info"]["Filename(s)"].endswith("data/policy.parquet")
    )
    assert shared["rows_scanned"] == 0 and shared["row_groups_scanned"] == 0
    assert sum(s["rows_scanned"] for s in found) == 11  # the full box's 11 rolls
    classic = "select * from policy where variant = 'classic'"
    found = scans(profile(database, classic, tmp_path))
    assert [s["extra_info"]["Filename(s)"] for s in found] == [str(doors / "policy.parquet")]
    assert found[0]["rows_scanned"] == 5621  # classic's rows, no other variant's
    assert found[0]["row_groups_scanned"] < found[0]["total_row_groups_to_scan"]


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    """A copy of the build of every variant, to change."""
    data = tmp_path / "data"
    shutil.copytree(built, data)
    return data


SMALL = ["--players", "3", "--tiles", "5", "--sides", "4", "--one-die", "forced"]
SMALL += ["--one-die-sum", "4", "--name", "three-small"]


def test_a_commit_rewrites_the_catalog_under_readers_without_blocking_them(copy: Path) -> None:
    """A reader holding the catalog open (read-only) keeps its views while a build renames a
    new catalog into place; other readers of the catalog and of the Parquet files run
    meanwhile; nothing temporary is left."""
    with layout.data_lock(copy):  # the copy's own catalog (the copied one reads `built`)
        catalog.refresh(copy)
    reader = duckdb.connect(str(copy / "stb.duckdb"), read_only=True)
    try:
        before = reader.execute("select count(*) from states").fetchone()
        other = subprocess.run(
            [duckdb_binary(), "-readonly", str(copy / "stb.duckdb"), "-c", "from rules limit 1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert other.returncode == 0, other.stderr
        parquet = subprocess.run(
            [duckdb_binary(), "-c", f"select count(*) from '{copy}/states.parquet'"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert parquet.returncode == 0, parquet.stderr
        result = invoke(["build", *SMALL, "--data-dir", copy, "--quiet"])
        assert result.code == 0, result.stderr
        assert reader.execute("select count(*) from states").fetchone() == before
    finally:
        reader.close()
    after = duckdb.connect(str(copy / "stb.duckdb"), read_only=True)
    try:
        new = after.execute("select count(*) from states where variant = 'three-small'")
        assert new.fetchone()[0] > 0
    finally:
        after.close()
    assert catalog.state(copy) == "current"
    assert not [p.name for p in copy.glob(".*") if p.name != ".stb.lock"]


def test_verify_says_when_the_catalog_is_missing_or_stale_and_fix_rewrites_it(
    copy: Path, cli
) -> None:
    # a copy's catalog still reads the directory it was copied from
    stale = cli(["verify", "-d", copy, "-v", "classic"])
    assert stale.code == 3 and "catalog stb.duckdb" in stale.stderr
    assert "verify --fix" in stale.stderr and "is out of date" in stale.stdout
    fixed = cli(["verify", "-d", copy, "-v", "classic", "--fix"])
    assert fixed.code == 0, fixed.stdout
    con = duckdb.connect(str(copy / "stb.duckdb"), read_only=True)
    try:
        where = con.execute("select value from stb_catalog where key = 'data_dir'").fetchone()
    finally:
        con.close()
    assert where == (str(copy.resolve()),)
    (copy / "stb.duckdb").unlink()
    assert catalog.state(copy) == "missing"
    # a build with nothing to do writes it
    again = cli(["build", "-v", "classic", "-d", copy, "--quiet"])
    assert again.code == 0 and "unchanged" in again.stdout
    assert catalog.state(copy) == "current"


def test_a_catalog_that_cannot_be_written_fails_the_build_in_one_line(tmp_path: Path, cli) -> None:
    """The tables are committed; the error says the catalog is not, and no old catalog stays
    to show other tables."""
    data = tmp_path / "data"
    (data / "variants" / "foreign").mkdir(parents=True)
    pl.DataFrame({"x": [1]}).write_parquet(data / "variants" / "foreign" / "states.parquet")
    (data / "stb.duckdb").write_bytes(b"an old catalog")
    result = cli(["build", "--tiles", "4", "--dice", "1", "--name", "tiny", "-d", data, "-q"])
    assert result.code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "the tables are written, but not the catalog" in result.stderr
    assert "foreign/states.parquet is not one of our tables" in result.stderr
    assert not (data / "stb.duckdb").exists() and (data / "states.parquet").exists()


def test_the_python_doors_name_what_is_not_built(doors: Path) -> None:
    with pytest.raises(TablesMissingError, match="no decisions table"):
        pipeline.scan("decisions", data_dir=doors)
    with pytest.raises(TablesMissingError, match="no policy rows of variant 'nope'"):
        pipeline.dataset("policy", "nope", data_dir=doors)


def test_a_catalog_that_cannot_be_replaced_is_named_and_wedges_nothing(copy: Path, cli) -> None:
    """Issue 41: a folder where the catalog goes made every build fail with "cannot finish the
    interrupted commit ...: Is a directory", never naming stb.duckdb, the journal left for ever
    and `verify` passing meanwhile."""
    (copy / "stb.duckdb").unlink()
    (copy / "stb.duckdb").mkdir()
    first = cli(["build", "-v", "classic", "--force", "-d", copy, "-q"])
    assert first.code == 1 and first.stderr.count("\n") == 1, first.stderr
    assert f"{copy / 'stb.duckdb'}: Is a directory; move it away" in first.stderr
    assert "the tables are written, but not the catalog" in first.stderr
    assert not (copy / ".stb-commit.json").exists()  # the commit is finished
    assert manifest.mismatches(copy) == []
    again = cli(["build", "-v", "classic", "-d", copy, "-q"])  # unchanged: only the catalog
    assert again.code == 1 and "stb.duckdb: Is a directory; move it away" in again.stderr
    stale = cli(["verify", "-v", "classic", "-d", copy])
    assert stale.code == 3 and "catalog stb.duckdb" in stale.stderr
    (copy / "stb.duckdb").rmdir()
    assert cli(["verify", "-v", "classic", "-d", copy, "--fix"]).code == 0


def test_verify_fails_while_a_commit_is_left_unfinished(copy: Path, cli) -> None:
    """A journal that cannot be finished means the tables are neither surely old nor new."""
    (copy / "summary.parquet.blocked").mkdir()  # a folder where the commit renames a file
    (copy / ".summary.1.tmp").write_bytes((copy / "summary.parquet").read_bytes())
    journal = {"renames": [[".summary.1.tmp", "summary.parquet.blocked"]], "manifest": {}}
    (copy / ".stb-commit.json").write_text(json.dumps(journal))
    result = cli(["verify", "-v", "classic", "-d", copy])
    assert result.code == 3, result.stdout
    assert "FAIL no unfinished commit" in result.stdout and ".stb-commit.json" in result.stdout
    assert (
        "no unfinished commit" in result.stderr and "cannot finish the interrupted" in result.stdout
    )
    (copy / ".stb-commit.json").write_text("{not a journal")
    unreadable = cli(["verify", "-v", "classic", "-d", copy])
    assert unreadable.code == 3 and "FAIL no unfinished commit" in unreadable.stdout


def duckdb_cli(database: Path, *sql: str, readonly: bool = True) -> subprocess.CompletedProcess:
    """The duckdb command on ``database``, one -c per statement."""
    commands = [arg for statement in sql for arg in ("-c", statement)]
    flags = ["-readonly"] if readonly else []
    return subprocess.run(
        [duckdb_binary(), *flags, str(database), *commands],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_verify_checks_the_views_the_catalog_holds_and_fix_repairs_them(copy: Path, cli) -> None:
    """Issue 41: a view replaced by hand kept its recorded fingerprint, and `verify` (--fix
    too) passed while `from policy` read one variant's rows."""
    with layout.data_lock(copy):
        catalog.refresh(copy)
    database = copy / "stb.duckdb"
    whole = duckdb_cli(database, "select count(*) from policy")
    assert whole.returncode == 0, whole.stderr
    narrowed = (
        "create or replace view policy as select * from "
        f"read_parquet('{copy}/policy.parquet') where variant = 'classic'"
    )
    assert duckdb_cli(database, narrowed, readonly=False).returncode == 0
    assert duckdb_cli(database, "select count(*) from policy").stdout != whole.stdout
    assert catalog.state(copy) == "changed"
    found = cli(["verify", "-v", "classic", "-d", copy])
    assert found.code == 3 and "catalog stb.duckdb" in found.stderr
    assert "holds views other than the ones it records" in found.stdout
    assert cli(["verify", "-v", "classic", "-d", copy, "--fix"]).code == 0
    assert duckdb_cli(database, "select count(*) from policy").stdout == whole.stdout
    # anything else added by hand is seen too: a macro could stand in for a function
    assert duckdb_cli(database, "create macro xor(a, b) as 0", readonly=False).returncode == 0
    assert catalog.state(copy) == "changed"
    # opened for writing and closed, untouched: still the catalog written
    assert cli(["verify", "-v", "classic", "-d", copy, "--fix"]).code == 0
    assert duckdb_cli(database, "select 1", readonly=False).returncode == 0
    assert catalog.state(copy) == "current"


def test_a_copied_catalog_never_answers_from_the_directory_it_was_copied_from(
    copy: Path, tmp_path: Path, cli
) -> None:
    """Issue 41: `cp -r DATA COPY; duckdb COPY/stb.duckdb` read DATA's files, silently. DuckDB
    has no path relative to the database file in a stored view (see pipeline/store/views.py):
    the views read absolute paths and refuse to answer from a catalog opened elsewhere."""
    database = copy / "stb.duckdb"  # a copy of `built`'s catalog
    refused = duckdb_cli(database, "select count(*) from policy")
    assert refused.returncode != 0
    assert f"stb.duckdb holds the views of the tables in {built_of(copy)}" in refused.stderr
    assert "not that directory's catalog (copied or moved)" in refused.stderr
    assert duckdb_cli(database, "from rules limit 1").returncode != 0
    pointed = duckdb_cli(database, f"set variable stb_data_dir = '{copy}'", "from rules limit 1")
    assert pointed.returncode == 0, pointed.stderr
    assert cli(["verify", "-v", "classic", "-d", copy, "--fix"]).code == 0
    own = duckdb_cli(database, "select value from stb_catalog where key = 'data_dir'")
    assert own.returncode == 0 and str(copy.resolve()) in own.stdout
    # the directory reached through a symbolic link is the same directory
    link = tmp_path / "link"
    link.symlink_to(copy, target_is_directory=True)
    assert duckdb_cli(link / "stb.duckdb", "select count(*) from states").returncode == 0


def built_of(copy: Path) -> str:
    """The directory a copy's catalog was written for (what its stb_catalog view records)."""
    con = duckdb.connect()
    try:
        con.execute(f"attach '{copy / 'stb.duckdb'}' as c (read_only)")
        row = con.execute("select value from c.stb_catalog where key = 'data_dir'").fetchone()
    finally:
        con.close()
    assert row is not None
    return str(row[0])
