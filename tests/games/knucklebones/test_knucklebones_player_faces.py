"""The distilled player through the one answer and the command line (issue 42): `knucklebones
label`, `train` and `rate`, an answer from the opening book (exact), to the end of every line
(exact) and from the evaluator's search (an estimate, its player named), on the 2x2 board with a
six-sided die (solved in seconds).

Rules: seed 004_4436d6a68a1265db.txt and seeds/README.md (Cult of the Lamb).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pipeline.analysis import knucklebones_artefacts as contract
from pipeline.answer.answers import for_dir
from pipeline.apps.knucklebones.position import solve
from pipeline.games.knucklebones.exact.solver import solve as solve_exact
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import artefacts, labels, positions
from pipeline.games.knucklebones.players import book as book_module
from pipeline.games.knucklebones.players.training import Settings, fit
from pipeline.games.registry import get_variant
from pipeline.store.files import write_file_atomic as save
from tests.conftest import invoke

BOARD = KnuckleRules(2, 2, 6)
VARIANT = "knucklebones-2x2"


@pytest.fixture(scope="module")
def exact() -> dict[str, np.ndarray]:
    return {o: solve_exact(KnuckleRules(2, 2, 6, o), tol=1e-12).values() for o in ("wins", "score")}


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory, exact: dict[str, np.ndarray]) -> Path:
    """A models folder holding a trusted evaluator and a 2-ply book of the 2x2 board."""
    folder = tmp_path_factory.mktemp("models")
    game = Knucklebones(BOARD)
    lookups = {k: (lambda ids, v=v: v[ids]) for k, v in exact.items()}
    found = positions.labelled_set(game, lookups, 400, 2000, 1)
    model = fit(game, found, Settings(embed=32, phi=32, hidden=(16, 8), epochs=3, seed=1))
    model.meta.update({"beats_search": True, "depth": 2})
    save(folder / "2x2-d6.npz", artefacts.evaluator_writer(model))
    save(
        folder / "2x2-d6-book.npz",
        artefacts.book_writer(book_module.make(game, lookups, 2, {"source": "test"})),
    )
    return folder


@pytest.fixture
def with_models(packaged: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The packaged models folder pointed at ``packaged`` for one test."""
    monkeypatch.setattr(artefacts, "MODELS", packaged)
    artefacts.packaged_evaluator.cache_clear()
    artefacts.packaged_book.cache_clear()
    yield packaged
    artefacts.packaged_evaluator.cache_clear()
    artefacts.packaged_book.cache_clear()


def test_the_book_answers_the_opening_exactly(
    with_models: Path, exact: dict[str, np.ndarray], tmp_path: Path
) -> None:
    game = Knucklebones(BOARD)
    a = solve("_/_", "_/_", 5, variant=VARIANT, data_dir=tmp_path)
    assert a.source == "book" and a.exact and a.how == "exact: yes (book)"
    assert a.value == pytest.approx(exact["wins"][0], abs=1e-12)
    for c in a.columns:
        after = game.play(np.zeros(2, dtype=np.int64), c.column - 1, 5)
        assert c.win == pytest.approx(1 - exact["wins"][game.state_of(after)], abs=1e-12)
        assert c.diff == pytest.approx(-exact["score"][game.state_of(after)], abs=1e-12)
    shown = invoke(["knucklebones", "solve", "_/_", "_/_", "5", "-v", VARIANT, "-d", tmp_path])
    assert shown.code == 0 and "exact: yes (book)" in shown.stdout and "yes (book)" in shown.stdout


def test_past_the_book_the_trusted_evaluator_searches(with_models: Path, tmp_path: Path) -> None:
    a = solve("12/_", "3/4", 2, variant=VARIANT, data_dir=tmp_path)
    assert a.source == "search" and not a.exact and a.player == "net-d2" and a.depth == 2
    assert a.how == "estimate (net-d2)"
    deeper = solve("12/_", "3/4", 2, depth=3, variant=VARIANT, data_dir=tmp_path)
    assert deeper.player == "net-d3"
    as_json = for_dir(tmp_path).board(get_variant(VARIANT), "12/_;3/4", 2).to_json()
    assert as_json["source"] == "search" and as_json["player"] == "net-d2"


def test_close_calls_are_searched_deeper_by_the_boards_own_player(
    with_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose record says ``deeper`` searches a close call that deep, only when no depth
    is asked; here every call is close (CLOSE 1.0), then none is (CLOSE 0). The mover has two
    open columns: a decision."""
    from pipeline.games.knucklebones.players import search

    model = artefacts.read_evaluator(with_models / "2x2-d6.npz")
    model.meta["deeper"] = 3
    save(with_models / "2x2-d6.npz", artefacts.evaluator_writer(model))
    artefacts.packaged_evaluator.cache_clear()
    try:
        monkeypatch.setattr(search, "CLOSE", 1.0)
        # the player is named as it is rated (issue 48: the README's net-d4+6 was shown as
        # net-d4), the depth is how deep it searched this position
        a = solve("1/_", "3/4", 2, variant=VARIANT, data_dir=tmp_path)
        assert a.player == "net-d2+3" and a.depth == 3 and a.source == "search"
        asked = solve("1/_", "3/4", 2, depth=2, variant=VARIANT, data_dir=tmp_path)
        assert asked.player == "net-d2" and asked.depth == 2  # a depth asked is searched
        monkeypatch.setattr(search, "CLOSE", 0.0)
        plain = solve("1/_", "3/4", 2, variant=VARIANT, data_dir=tmp_path)
        assert plain.player == "net-d2+3" and plain.depth == 2
    finally:
        model.meta.pop("deeper")
        save(with_models / "2x2-d6.npz", artefacts.evaluator_writer(model))
        artefacts.packaged_evaluator.cache_clear()


def test_a_close_call_is_two_columns_within_the_margin_not_both_exact() -> None:
    from pipeline.games.knucklebones.players.search import CLOSE, Eval, close_call

    def ev(win: float, diff: float = 0.0, exact: bool = False) -> Eval:
        return Eval(win, diff, exact, False)

    assert close_call([ev(0.5), ev(0.5 + CLOSE / 2), ev(0.1)])
    assert not close_call([ev(0.5), ev(0.5 + 2 * CLOSE)])
    assert not close_call([ev(0.5, exact=True), ev(0.5, exact=True)])
    assert not close_call([ev(0.5)])
    assert close_call([ev(0.1, 3.0), ev(0.9, 3.0 + 15 * CLOSE)], by_diff=True)


def test_a_player_that_deepens_its_close_calls_by_name() -> None:
    from pipeline.apps.knucklebones.match import check_player
    from pipeline.errors import UsageError
    from pipeline.games.knucklebones.players.engine import Player

    assert check_player("net-d2+4") == 4 and check_player("ours-d1+3") == 3
    for bad, words in (("net-d4+3", "deeper than 4"), ("net-d4+9", "1 to 8"),
                       ("net-d4+", "unknown player"), ("net-d+4", "unknown player")):  # fmt: skip
        with pytest.raises(UsageError, match=words):
            check_player(bad)
    game = Knucklebones(BOARD)
    play = Player(game, "ours-d1+3")
    empty = np.zeros(2, dtype=np.int64)  # the start: both columns empty on both sides
    assert play(empty, 3, np.random.default_rng(0)) in (0, 1)


def test_without_a_trusted_model_the_search_plays(with_models: Path, tmp_path: Path) -> None:
    model = artefacts.read_evaluator(with_models / "2x2-d6.npz")
    model.meta["beats_search"] = False
    save(with_models / "2x2-d6.npz", artefacts.evaluator_writer(model))
    artefacts.packaged_evaluator.cache_clear()
    try:
        a = solve("12/_", "3/4", 2, variant=VARIANT, data_dir=tmp_path)
        assert a.player == "ours-d3" and a.source == "search"
    finally:
        model.meta["beats_search"] = True
        save(with_models / "2x2-d6.npz", artefacts.evaluator_writer(model))
        artefacts.packaged_evaluator.cache_clear()


def test_the_endgame_is_searched_to_the_end(tmp_path: Path, exact: dict[str, np.ndarray]) -> None:
    # the mover's last slot: every column ends the game, so the answer is exact at any depth
    a = solve("12/3", "4/5", 6, depth=1, variant=VARIANT, data_dir=tmp_path)
    assert a.source == "end" and a.how.startswith("exact: yes (searched to the end")
    game = Knucklebones(BOARD)
    here = a.value
    pairs = for_dir(tmp_path).board_rules(get_variant(VARIANT)).boards("12/3", "4/5").pairs
    assert here == pytest.approx(exact["wins"][game.state_of(pairs)], abs=1e-9)


def test_label_train_and_rate_from_the_command_line(tmp_path: Path) -> None:
    labelled = tmp_path / "l.parquet"
    made = invoke([
        "knucklebones", "label", "-v", VARIANT, "--games", "100", "--uniform", "500",
        "-o", labelled, "--solve", "-q",
    ])  # fmt: skip
    assert made.code == 0, made.stderr
    found = artefacts.read_labelled(labelled)
    assert len(found) > 500 and found.meta["values"].startswith("solved here")
    assert max(contract.bellman_residual(found, n).max() for n in ("win", "diff")) < 1e-9
    weights = tmp_path / "m.npz"
    trained = invoke([
        "knucklebones", "train", "-v", VARIANT, "--games", "200", "--uniform", "1000",
        "--epochs", "1", "--depth", "1", "--deeper", "2", "--decisions", "50", "-o", weights,
        "--solve", "-q",
    ])  # fmt: skip
    assert trained.code == 0, trained.stderr
    model = artefacts.read_evaluator(weights)
    record = model.meta
    assert record["training"]["games"] == 200 and record["depth"] == 1
    assert [r["player"] for r in record["ratings"]] == ["net-d1+2", "ours-d4"]
    assert record["deeper"] == 2
    assert isinstance(record["beats_search"], bool)
    assert json.loads(json.dumps(record)) == record  # plain data
    book = tmp_path / "b.npz"
    booked = invoke(["knucklebones", "book", "-v", VARIANT, "--plies", "2", "-o", book, "--solve"])
    assert booked.code == 0, booked.stderr
    assert artefacts.read_book(book).values(book_module.reachable(Knucklebones(BOARD), 2))
    rated = invoke([
        "knucklebones", "rate", "-v", VARIANT, "--players", "greedy,ours-d1", "--games", "100",
        "--decisions", "40", "--solve", "--no-write", "-q",
    ])  # fmt: skip
    assert rated.code == 0, rated.stderr
    assert "greedy" in rated.stdout and "ours-d1" in rated.stdout


def test_a_labelled_file_trains_and_rates_without_a_solve(tmp_path: Path) -> None:
    """What the full game's GPU-made set is for: fit to a file's positions less its held-out
    tenth, rate on that tenth; no solve, no tables."""
    labelled = tmp_path / "l.parquet"
    made = invoke(["knucklebones", "label", "-v", VARIANT, "--games", "300", "--uniform", "3000",
                   "-o", labelled, "--solve", "-q"])  # fmt: skip
    assert made.code == 0, made.stderr
    found = artefacts.read_labelled(labelled)
    held = int(labels.held_out(found.state_id).sum())
    assert 0 < held < len(found)
    weights = tmp_path / "m.npz"
    trained = invoke(["knucklebones", "train", "-v", VARIANT, "--labelled", labelled, "--epochs",
                      "1", "--depth", "1", "--decisions", "30", "-o", weights, "-q",
                      "-d", tmp_path / "nowhere"])  # fmt: skip
    assert trained.code == 0, trained.stderr
    record = artefacts.read_evaluator(weights).meta
    assert record["training"]["values"].startswith("l.parquet (solved here")
    assert record["training"]["positions"] == len(found)
    assert record["ratings"][0]["decisions"] <= 30
    rated = invoke(["knucklebones", "rate", "-v", VARIANT, "--labelled", labelled, "--players",
                    "greedy", "--decisions", "20", "--no-write", "-q"])  # fmt: skip
    assert rated.code == 0, rated.stderr
    assert f"from {labelled}" in rated.stdout
    other = invoke(["knucklebones", "rate", "-v", "knucklebones-2x3", "--labelled", labelled,
                    "--players", "greedy", "--no-write", "-q"])  # fmt: skip
    assert other.code == 2 and "records the 2x2-d6 board, not 2x3-d6" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["label", "-o", "{tmp}", "--games", "5"], "would write the data directory itself"),
        (["label", "-o", "{tmp}/x.parquet", "--games", "0"], "--games must be between"),
        (["label", "-o", "{tmp}/x.parquet", "--seed", "-1"], "--seed must be between"),
        (["label", "-o", "{tmp}/x.parquet", "-v", "classic"], "not a Knucklebones board"),
        (["label", "-o", "{tmp}/o/x.parquet", "-v", "knucklebones"], "exist only on a GPU"),
        (["train", "-o", "{tmp}/m.npz", "--epochs", "0"], "--epochs must be between"),
        (["train", "-o", "{tmp}/m.npz", "--depth", "0"], "--depth must be between"),
        (["train", "-o", "{tmp}/m.npz", "--depth", "4", "--deeper", "3"], "--deeper must be 0"),
        (["rate", "--players", "net-d4+2"], "close calls go deeper than 4"),
        (["rate", "--players", "greedy,wizard"], "unknown player 'wizard'"),
        (["rate", "--players", "net-d2", "-v", "knucklebones-2x3"], "no evaluator"),
        (["rate", "--decisions", "5"], "--decisions must be between"),
        (["book", "-o", "{tmp}/b.npz", "--plies", "13"], "--plies must be between"),
        (["book", "-o", "{tmp}"], "would write the data directory itself"),
        # issue 48: an empty name is a mistake, never the default board (minutes of solving)
        (["label", "-o", "{tmp}/x.parquet", "-v", ""], "--variant '': give a board's name"),
        (["book", "-o", "{tmp}/b.npz", "-v", " "], "--variant ' ': give a board's name"),
        (["train", "-o", "{tmp}/m.npz", "-v", ""], "--variant '': give a board's name"),
        (["rate", "-v", ""], "--variant '': give a board's name"),
        (["rate", "--players", ""], "--players ''"),
        (["rate", "--players", "greedy,,ours-d1"], "none empty"),
        # a player's leaves bound is a positive number (issue 47)
        (["benchmark", "--opponents", "net-d3+5/0", "--games", "2"], "the leaves must be"),
        (["train", "-o", "{tmp}/m.npz", "--deeper", "0", "--leaves", "9"], "give --deeper too"),
        (["train", "-o", "{tmp}/m.npz", "--leaves", "-1"], "--leaves must be between"),
        (["rate", "--labelled", "{tmp}/none.parquet"], "no such file"),
        (["train", "-o", "{tmp}/m.npz", "--labelled", "{tmp}"], "no such file"),
        (["rate", "--labelled", "{tmp}/bad.parquet"], "bad.parquet is not a usable labelled set"),
    ],
)
def test_bad_input_gets_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_text("not a Parquet file")
    found = invoke(["knucklebones", *[a.replace("{tmp}", str(tmp_path)) for a in args],
                    "-d", tmp_path, "--no-write" if args[0] == "rate" else "-q"])  # fmt: skip
    assert found.code == 2, (found.code, found.stdout, found.stderr)
    assert message in found.stderr and "Traceback" not in found.stderr
    assert len(found.stderr.strip().splitlines()) == 1
