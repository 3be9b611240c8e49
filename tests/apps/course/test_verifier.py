"""Seed 002_966add8e0a53f14d.txt's verifier file: `export verifier` and `check-verifier`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.apps.course.verifier import EXIT_BAD_FILE, check_lines
from pipeline.games.nplayer.game import NPlayer as TwoPlayer
from pipeline.store import tables

SEED = "002_966add8e0a53f14d.txt"
# Seed 002_966add8e0a53f14d.txt's verifier sample lines, verbatim.
SEED_LINES = [
    "1,1,0.5833333333333333",
    "2,1,0.16666666666666666",
    "2,2,0.5833333333333333",
    "3,1,0.16666666666666666",
    "3,2,0.16666666666666666",
    "23456789,0.3476896905946085",
    "123456789,0.5028103544024047",
]


@pytest.fixture(scope="module")
def export(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import invoke

    path = tmp_path_factory.mktemp("verifier") / "two-player.verifier"
    result = invoke(["export", "verifier", "--variant", "two-player", "-o", path, "-d", built])
    assert result.code == 0, result.stderr
    assert "wrote 12,028 lines" in result.stdout
    return path


def key(line: str) -> tuple[str, str | None]:
    """A line's state: (tiles, P1 score or None)."""
    fields = line.split(",")
    return fields[0], fields[1] if len(fields) == 3 else None


def test_export_holds_the_seed_sample_lines(export: Path) -> None:
    """Seed 002_966add8e0a53f14d.txt's sample values, compared as floats to 1e-12."""
    lines = export.read_text().splitlines()
    values = {key(line): float(line.rsplit(",", 1)[1]) for line in lines}
    for sample in SEED_LINES:
        assert values[key(sample)] == pytest.approx(float(sample.rsplit(",", 1)[1]), abs=1e-12)
    # the seed's file starts with the same five states in the same order, and ends as it does
    assert [key(line) for line in lines[:5]] == [key(s) for s in SEED_LINES[:5]]
    assert [key(line) for line in lines[-2:]] == [key(s) for s in SEED_LINES[-2:]]


def test_export_lists_nonterminal_states_with_possible_scores(export: Path, built: Path) -> None:
    lines = export.read_text().splitlines()
    states = tables.read_table(built, "states", "two-player")
    live = states.filter(~states["terminal"])
    assert len(lines) == live.height == len({key(line) for line in lines})
    scores = {int(s) for _, s in map(key, lines) if s is not None}
    assert scores == set(range(1, 44))  # P1 can finish a turn with 1..43, never 44 or 45
    for line in lines:
        tiles, score = key(line)
        assert list(tiles) == sorted(set(tiles)) and "0" not in tiles
        if score is not None:
            assert sum(map(int, tiles)) >= int(score)  # else P2 has already won: terminal


def test_export_values_read_back_exactly(export: Path, built: Path) -> None:
    """Full precision: each printed value parses back to the very double in the tables."""
    game = TwoPlayer()
    states = tables.read_table(built, "states", "two-player")
    value = dict(zip(states["state_id"].to_list(), states["value"].to_list(), strict=True))
    for line in export.read_text().splitlines():
        tiles, score = key(line)
        sid = game.parse_state(tiles, p1_score=None if score is None else int(score))
        assert float(line.rsplit(",", 1)[1]) == value[sid]


def test_export_order_puts_successors_first(export: Path, built: Path) -> None:
    """Every line comes after the lines of all of its state's nonterminal successors."""
    game = TwoPlayer()
    position = {}
    for i, line in enumerate(export.read_text().splitlines()):
        tiles, score = key(line)
        position[game.parse_state(tiles, p1_score=None if score is None else int(score))] = i
    edges = tables.read_table(built, "edges", "two-player")
    pairs = set(zip(edges["state_id"].to_list(), edges["next_state_id"].to_list(), strict=True))
    checked = 0
    for src, dst in pairs:
        if dst is not None and dst in position:  # terminal successors are not listed
            assert position[dst] < position[src], (src, dst)
            checked += 1
    assert checked > 100_000
    # the P1 passes are among them: P2's full box comes before every P1 state that passes to it
    # 1235 rolling 12 is stuck with score 11: P2's full box against 11 comes first
    assert position[11 * 512 + 511] < position[game.parse_state("1235")]


def test_check_verifier_accepts_the_export(cli, export: Path, built: Path) -> None:
    result = cli(["check-verifier", export, "-d", built])
    assert result.code == 0, result.stdout + result.stderr
    assert "12,028 lines" in result.stdout


def test_check_verifier_catches_a_swapped_pair(cli, export: Path, built: Path, tmp_path) -> None:
    """Swap P2's {1, 2} against score 1 with its successor {2} (rolling 1 shuts tile 1)."""
    lines = export.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("2,1,"))
    j = next(k for k, line in enumerate(lines) if line.startswith("12,1,"))
    assert i < j
    lines[i], lines[j] = lines[j], lines[i]
    bad = tmp_path / "swapped.verifier"
    bad.write_text("\n".join(lines) + "\n")
    result = cli(["check-verifier", bad, "-d", built, "--all"])
    assert result.code == EXIT_BAD_FILE
    assert result.stdout.splitlines() == [
        f"{bad}: line {i + 1}: missing successor: {lines[i]!r} comes before its successor 2,1"
    ]


def test_check_verifier_catches_a_wrong_value(cli, export: Path, built: Path, tmp_path) -> None:
    lines = export.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith("2,2,"))
    lines[n] = "2,2,0.5833"  # the seed's value is 0.5833333333333333
    bad = tmp_path / "wrong.verifier"
    bad.write_text("\n".join(lines) + "\n")
    result = cli(["check-verifier", bad, "-d", built])
    assert result.code == EXIT_BAD_FILE
    assert result.stdout.startswith(f"{bad}: line {n + 1}: incorrect value: '2,2,0.5833'")
    # within the tolerance it passes
    lines[n] = "2,2,0.58333333333334"
    bad.write_text("\n".join(lines) + "\n")
    assert cli(["check-verifier", bad, "-d", built]).code == 0
    assert cli(["check-verifier", bad, "-d", built, "--tolerance", "1e-15"]).code == EXIT_BAD_FILE


def test_check_verifier_on_the_seed_sample_itself(built: Path) -> None:
    """The seed's excerpt is right in value, but skips successors (the file elides them)."""
    states = tables.read_table(built, "states", "two-player")
    edges = tables.read_table(built, "edges", "two-player")
    report = check_lines(SEED_LINES, TwoPlayer(), states, edges)
    kinds = {p.line: p.kind for p in report.problems}
    assert kinds == {6: "missing successor", 7: "missing successor"}
    report = check_lines(SEED_LINES[:5], TwoPlayer(), states, edges)
    assert report.ok


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("123,abc", "bad format"),
        ("123", "bad format"),
        ("1,2,3,0.5", "bad format"),
        ("12x,0.5", "bad format"),
        ("123,x,0.5", "bad format"),
        ("123,nan", "bad format"),
        ("123,44,0.5", "unknown state"),
        ("123,0,0.5", "unknown state"),
        ("123,-1,0.5", "bad format"),
        (",1.0", None),  # the shut box: P1 has won
        (",1,0.0", "incorrect value"),  # P2 shut the box against 1: P2 has won
        ("1,0.9", "incorrect value"),
        ("12345689,41,1.0", None),  # a terminal state may be listed; its value is checked
        ("12345689,41,0.0", "incorrect value"),
    ],
)
def test_check_lines_reports(built: Path, line: str, kind: str | None) -> None:
    states = tables.read_table(built, "states", "two-player")
    edges = tables.read_table(built, "edges", "two-player")
    report = check_lines(["", line], TwoPlayer(), states, edges)
    if kind is None:
        assert report.ok
    else:
        assert [(p.line, p.kind) for p in report.problems] == [(2, kind)]


def test_check_verifier_lists_all_problems(cli, built: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.verifier"
    bad.write_text("1,1,0.5\n2,1,0.1\n")
    first = cli(["check-verifier", bad, "-d", built])
    assert first.code == EXIT_BAD_FILE and "1 more wrong lines" in first.stdout
    every = cli(["check-verifier", bad, "-d", built, "--all"])
    assert every.stdout.count("incorrect value") == 2


def test_custom_rules_export_and_check(cli, tmp_path: Path) -> None:
    """Generalised rules: solved on the spot; the export passes its own check."""
    out = tmp_path / "small.verifier"
    rules = ["--tiles", "4", "--sides", "3", "--one-die-sum", "3"]
    result = cli(["export", "verifier", "-o", out, *rules])
    assert result.code == 0, result.stderr
    lines = out.read_text().splitlines()
    assert lines[-1].startswith("1234,")
    assert cli(["check-verifier", out, *rules]).code == 0
    # the same file is wrong for other rules
    assert cli(["check-verifier", out, "--tiles", "4"]).code == EXIT_BAD_FILE


def test_more_than_nine_tiles_are_space_separated(cli, tmp_path: Path) -> None:
    out = tmp_path / "ten.verifier"
    rules = ["--tiles", "10", "--dice", "1", "--sides", "2"]  # small: one two-sided die
    assert cli(["export", "verifier", "-o", out, *rules]).code == 0
    lines = out.read_text().splitlines()
    assert lines[-1].startswith("1 2 3 4 5 6 7 8 9 10,")
    assert any(line.startswith("10,") for line in lines)
    assert cli(["check-verifier", out, *rules]).code == 0


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["export", "verifier", "-v", "classic", "-o", "{tmp}/x"], 2, "not a two-player game"),
        (["export", "verifier", "-o", "/proc/missing/x"], 1, "cannot write /proc/missing/x"),
        (["export", "verifier", "-o", "{tmp}/x", "--tiles", "13"], 2, "between 1 and 12"),
        (["check-verifier", "{tmp}/nothing"], 2, "cannot read"),
        (["check-verifier", "{tmp}/x", "-v", "nosuch"], 2, "unknown variant"),
    ],
)
def test_bad_input(cli, built: Path, tmp_path: Path, args, code: int, message: str) -> None:
    argv = [a.format(tmp=tmp_path) for a in args] + ["-d", built]
    result = cli(argv)
    assert result.code == code
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "missing").exists()


def test_export_needs_built_tables(cli, tmp_path: Path) -> None:
    result = cli(["export", "verifier", "-o", tmp_path / "x", "-d", tmp_path / "empty"])
    assert result.code == 2 and "stb-pipeline build --variant two-player" in result.stderr
    assert not (tmp_path / "x").exists()


def test_export_keeps_the_old_file_on_failure(cli, built: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept.verifier"
    out.write_text("old\n")
    result = cli(["export", "verifier", "-o", out, "--force", "-d", tmp_path / "empty"])
    assert result.code == 2 and out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.verifier"]
