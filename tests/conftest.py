"""Shared fixtures: an in-process CLI runner and one build of every variant per test session."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.cli.app import run

REPO = Path(__file__).resolve().parent.parent

# pytest-xdist's workers set COLUMNS=80 and LINES=24; the CLI draws its tables for $COLUMNS
# (a terminal's width), so every test runs as it does in one process, without them (a test of
# a width sets its own).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@dataclass
class Result:
    """Exit code and captured output of one CLI call."""

    code: int
    stdout: str
    stderr: str


def invoke(args: list[str]) -> Result:
    """Run `stb-pipeline ARGS` in this process and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Callable[[list[str]], Result]:
    """The in-process CLI runner."""
    return invoke


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder that ``make`` fills, made once per test run: under pytest-xdist the first worker
    to ask makes it in the run's shared temporary folder while the others wait, so a build that
    files on both workers use is not paid twice. Tests only read these folders (they copy one to
    change it), as they already did within a worker."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        data = factory.mktemp(name)
        make(data)
        return data
    from filelock import FileLock

    root = factory.getbasetemp().parent  # the run's folder, above each worker's own
    data, done = root / name, root / f"{name}.done"
    with FileLock(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(data, ignore_errors=True)  # a worker that failed midway left it
            data.mkdir()
            make(data)  # made where it stays: a catalog names its own folder
            done.touch()
    return data


def build_into(*args: str | Path) -> Callable[[Path], None]:
    """A ``make`` for :func:`once`: ``stb-pipeline build ARGS --data-dir FOLDER``."""

    def make(data: Path) -> None:
        result = invoke(["build", *args, "--data-dir", data])
        assert result.code == 0, result.stderr

    return make


#: The files whose tests take longest (about a minute or more of a worker's time each, mostly in
#: a few tests: builds killed, boards solved, the CUDA simulator, commands run as a person would):
#: given to the workers first, so that the run does not end with one worker in one of them while
#: the other has nothing left. The other files follow, those with the most tests first (as
#: pytest-xdist orders them itself, which ``--no-loadscope-reorder`` in pyproject.toml leaves
#: to this).
LONG_FILES = (
    "store/test_kill_safety.py",
    "games/knucklebones/test_knucklebones_artefacts.py",
    "games/knucklebones/test_knucklebones_gpu.py",
    "games/knucklebones/test_knucklebones_artefact_contract.py",
    "store/test_catalog.py",
    "docs/test_readme.py",
    "games/knucklebones/test_knucklebones_vi.py",
    "analysis/test_verify.py",
    "apps/test_explorer.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in the order the workers take them: :data:`LONG_FILES`, then by number of tests
    (each file's tests keep their order)."""
    files = [str(Path(item.path).relative_to(REPO / "tests")) for item in items]
    count: dict[str, int] = {}
    for file in files:
        count[file] = count.get(file, 0) + 1
    rank = {file: i for i, file in enumerate(LONG_FILES)}
    first = {file: i for i, file in reversed(list(enumerate(files)))}
    order = sorted(range(len(items)), key=lambda i: (
        rank.get(files[i], len(rank)), -count[files[i]], first[files[i]], i
    ))  # fmt: skip
    items[:] = [items[i] for i in order]


#: The shared builds (:func:`once`) each pytest-xdist worker makes before its first test, so
#: that the two workers build them side by side instead of one waiting for a build the other
#: started; a build no collected test uses is not made. Other workers (and a run without
#: them) build each when a test first asks for it.
FIRST_BUILDS = {"gw0": ("built", "built_by_name"), "gw1": ("built_more", "doors")}


@pytest.fixture(scope="session", autouse=True)
def first_builds(request: pytest.FixtureRequest) -> None:
    """The builds of :data:`FIRST_BUILDS` for this worker."""
    used = {name for item in request.session.items for name in item.fixturenames}
    for name in FIRST_BUILDS.get(os.environ.get("PYTEST_XDIST_WORKER", ""), ()):
        if name in used:
            request.getfixturevalue(name)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding `stb-pipeline build --variant all` (built once per run)."""
    return once(tmp_path_factory, "data", build_into("--variant", "all"))


#: The variants of :func:`built_more`: a game of four players and the stake game (stored on
#: their own, solved without a graph) and a 16-tile box (streamed; its moves table too, for the
#: tests to compare with), beside two-player.
MORE = ("two-player", "four-player", "two-player-stake")
BOX16 = "stb-16t-2d6-score"


@pytest.fixture(scope="session")
def built_more(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding :data:`MORE` and the 16-tile box :data:`BOX16` (built once
    per run: about 5 s)."""

    def make(data: Path) -> None:
        build_into("--variant", ",".join(MORE))(data)
        build_into("--tiles", "16", "--objective", "score", "--moves")(data)

    return once(tmp_path_factory, "data-more", make)


#: The N-player variants stored on their own, which `--variant all` leaves out (built by name).
BY_NAME = ("three-player", "four-player", "three-player-two-dice", "two-player-stake")
#: A small Knucklebones board written as the full game is (lean states and decisions), so that
#: the full-game queries have tables to read; ``-score`` is its score twin.
LEAN_BOARD = "kb-lean-2x2-d3"
#: The board whose players `built_by_name` rates (`knucklebones rate`).
RATED_BOARD = "knucklebones-2x2"


@pytest.fixture(scope="session")
def built_by_name(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`built` with, beside `--variant all`, the variants built by name: the
    opt-in N-player games of :data:`BY_NAME` and the lean tables of :data:`LEAN_BOARD` (a 2x2
    board with a three-faced die). Every query of the library has its variant here."""
    from pipeline.games.knucklebones.game import KnuckleRules
    from tests.support.knucklebones_lean import write_lean_pair

    def make(folder: Path) -> None:
        data = folder / "data"
        shutil.copytree(built, data)
        build_into("--variant", ",".join(BY_NAME))(data)
        write_lean_pair(data, LEAN_BOARD, KnuckleRules(2, 2, 3))
        # players rated against the 2x2 board's exact tables (`query knucklebones_players`)
        rated = ["knucklebones", "rate", "-v", RATED_BOARD, "--players", "greedy,ours-d1,ours-d2"]
        result = invoke([*rated, "--decisions", "60", "--games", "200", "--data-dir", data, "-q"])
        assert result.code == 0, result.stderr

    return once(tmp_path_factory, "by-name", make) / "data"


#: What `doors` adds to the build of every variant: an N-player game and a big box, each stored
#: in files of its own (the box's tile columns left to the reader, with its moves and edges).
DOOR_BUILDS = [
    [
        *("--players", "3", "--tiles", "5", "--sides", "4"),
        *("--one-die", "forced", "--one-die-sum", "4", "--name", "three-small"),
    ],
    ["--tiles", "13", "--objective", "score", "--moves", "--edges"],
]
#: A variant of each kind of file `doors` holds: shared (one player, two players,
#: Knucklebones), stored on its own (N-player), and a big box.
DOOR_VARIANTS = ["classic", "two-player", "knucklebones-2x2", "three-small", "stb-13t-2d6-score"]


@pytest.fixture(scope="session")
def doors(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `built` with the variants of DOOR_BUILDS added (a copy: `built` stays as the
    plain build): every kind of table file the readers (catalog, polars, pyarrow) meet."""

    def make(folder: Path) -> None:
        shutil.copytree(built, folder / "data")
        for args in DOOR_BUILDS:
            build_into(*args, "--quiet")(folder / "data")

    return once(tmp_path_factory, "doors", make) / "data"
