"""The package's layers hold at run time (issue 13; docs/architecture.md).

Every import between the package's modules, at module level or inside a function, must point
down the list of layers; there are no import circles; and importing the solvers, or asking the
CLI for help, loads neither polars, duckdb nor any game.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "pipeline"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def doc_table(first_header: str) -> list[list[str]]:
    """The rows of the table of docs/architecture.md whose first header cell is
    ``first_header``: each row its cells, stripped (the header and the rule line left out)."""
    rows: list[list[str]] = []
    inside = False
    for line in ARCHITECTURE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            if inside:
                break
            continue
        if not inside:
            inside = cells[0] == first_header
            continue
        if set(cells[0]) <= set("-: "):
            continue
        rows.append(cells)
    assert rows, f"docs/architecture.md has no table headed {first_header!r}"
    return rows


def _module_of_path(cell: str) -> str:
    """``pipeline/solve/`` -> ``pipeline.solve``; ``pipeline/__init__.py`` -> ``pipeline``."""
    path = cell.strip("`").removesuffix("/").removesuffix(".py")
    return path.replace("/", ".").removesuffix(".__init__")


#: The layers of docs/architecture.md, lowest first, each with the module (or package) it holds.
#: A module may import its own layer and the layers before it.
LAYER_MODULES = tuple((row[0], _module_of_path(row[1])) for row in doc_table("layer"))
LAYERS = tuple(name for name, _ in LAYER_MODULES)
#: Each layer's floor and the layers it imports, as docs/architecture.md writes them (a note in
#: parentheses aside).
DOC_FLOORS = {row[0]: int(row[2]) for row in doc_table("layer")}
DOC_IMPORTS = {
    row[0]: {name.strip() for name in re.sub(r"\(.*?\)", "", row[4]).split(",")} - {"nothing"}
    for row in doc_table("layer")
}

#: The parts of pipeline/games/ (docs/architecture.md, "Inside the games layer"): each part's
#: modules (relative to pipeline.games) and the parts it may import besides itself.
GAME_PARTS = {
    row[0]: (
        tuple(m.strip("` ").removesuffix("/").removesuffix(".py") for m in row[1].split(",")),
        tuple(p.strip() for p in row[2].split(",") if p.strip() != "nothing"),
    )
    for row in doc_table("part")
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of the layer holding ``module`` (None: in no layer)."""
    for i, (_, holder) in enumerate(LAYER_MODULES):
        if module == holder or (module.startswith(holder + ".") and holder != "pipeline"):
            return i
    return None


def imports_of(path: Path, run_time_only: bool = False) -> list[tuple[str, bool]]:
    """(module imported, at module level?) for every import of a pipeline module in ``path``.

    ``from pipeline.x import name`` imports ``pipeline.x.name`` where that is a module, else
    ``pipeline.x``: so ``from pipeline import progress`` is an import of the progress layer and
    ``from pipeline import __version__`` one of the package's face. With ``run_time_only``,
    imports under ``if TYPE_CHECKING:`` (for type hints) are left out.
    """
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if run_time_only and id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                names.append(inner if _exists(inner) else node.module)
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if (name == "pipeline" or name.startswith("pipeline.")) and _exists(name):
                found.append((name, id(node) in top))
    return found


def _exists(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def test_every_module_has_a_layer() -> None:
    for name in all_modules():
        assert layer_of(name) is not None, f"{name} is in no layer: add it to docs/architecture.md"


def test_the_layers_are_the_documented_ones() -> None:
    """The layer table of docs/architecture.md is read as it stands (so the doc is the code's
    plan): every layer's module exists, and the package's face is the top layer but one."""
    assert LAYERS[0] == "version" and LAYERS[-2:] == ("face", "main"), LAYERS
    for _, module in LAYER_MODULES:
        assert _exists(module), f"docs/architecture.md names {module}, which does not exist"


def layer_imports() -> dict[str, set[str]]:
    """The layers each layer imports (its own apart), from the code."""
    found: dict[str, set[str]] = {name: set() for name in LAYERS}
    for name, path in all_modules().items():
        mine = LAYERS[layer_of(name) or 0]
        for target, _ in imports_of(path):
            theirs = layer_of(target)
            if theirs is not None and LAYERS[theirs] != mine:
                found[mine].add(LAYERS[theirs])
    return found


def floors(imports: dict[str, set[str]]) -> dict[str, int]:
    """Each layer's floor: 1 when it imports no other layer, else one above the highest it
    imports. Layers come lowest first, so one pass."""
    out: dict[str, int] = {}
    for name in LAYERS:
        out[name] = 1 + max((out.get(t, 0) for t in imports[name]), default=0)
    return out


def test_layer_imports_and_floors_are_the_documented_ones() -> None:
    """docs/architecture.md's layers are the code's: each layer imports exactly the layers its
    row lists, and stands on the floor its row says."""
    found = layer_imports()
    wrong = [
        f"{name} imports {', '.join(sorted(found[name], key=LAYERS.index)) or 'nothing'}; "
        f"the doc lists {', '.join(sorted(DOC_IMPORTS[name], key=LAYERS.index)) or 'nothing'}"
        for name in LAYERS
        if found[name] != DOC_IMPORTS[name]
    ]
    assert not wrong, "docs/architecture.md's imports column:\n" + "\n".join(wrong)
    assert floors(found) == DOC_FLOORS, "docs/architecture.md's floor column"


def test_floors_are_counted_from_the_imports() -> None:
    imports = {name: set() for name in LAYERS} | {
        "solve": {"graph"},
        "games": {"solve", "errors"},
        "face": {"games"},
    }
    found = floors(imports)
    assert (found["errors"], found["solve"], found["games"], found["face"]) == (1, 2, 3, 4)


def floor_of(paths: list[Path]) -> int:
    """The floor of some files outside the package: one above the highest layer they import."""
    found = floors(layer_imports())
    used = {layer_of(t) for p in paths for t, _ in imports_of(p)} - {None}
    return 1 + max((found[LAYERS[u]] for u in used if u is not None), default=0)


def test_the_benchmarks_stand_where_the_doc_says() -> None:
    floor = floor_of(sorted((REPO / "benchmarks").rglob("*.py")))
    text = " ".join(ARCHITECTURE.read_text().split())
    assert re.search(rf"`benchmarks/` stands on floor {floor}\b", text), floor


def test_nothing_imports_the_face() -> None:
    """``pipeline/__init__.py`` imports the API, which imports everything: a module of the
    package that imported it (for ``__version__``, say) would import every layer above its own."""
    found = [
        f"{name} imports {target}"
        for name, path in all_modules().items()
        for target, _ in imports_of(path)
        if target == "pipeline"
    ]
    assert not found, "\n".join(found)


def test_imports_point_down() -> None:
    upward = []
    for name, path in all_modules().items():
        mine = layer_of(name)
        assert mine is not None, name
        for target, _ in imports_of(path):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(sorted(set(upward)))


def game_part_of(module: str) -> str | None:
    """The part of pipeline/games/ (:data:`GAME_PARTS`) that holds ``module``; None outside."""
    if not module.startswith("pipeline.games."):
        return None
    rel = module.removeprefix("pipeline.games.")
    for part, (modules, _) in GAME_PARTS.items():
        if any(rel == m or rel.startswith(m + ".") for m in modules):
            return part
    return None


def test_every_games_module_has_a_part() -> None:
    missing = [
        name
        for name in all_modules()
        if name.startswith("pipeline.games.") and game_part_of(name) is None
    ]
    assert not missing, f"in no part of docs/architecture.md's games table: {missing}"


def test_games_imports_point_down() -> None:
    """Inside pipeline/games/: a family imports the shared modules, itself and the families it
    is built on, never a family built on it; the shared modules import no family (the
    registry reaches them only by name, with importlib, on first lookup)."""
    wrong = []
    for name, path in all_modules().items():
        mine = game_part_of(name)
        if mine is None:
            continue
        allowed = {mine, *GAME_PARTS[mine][1]}
        for target, _ in imports_of(path):
            theirs = game_part_of(target)
            if theirs is not None and theirs not in allowed:
                wrong.append(f"{name} ({mine}) -> {target} ({theirs})")
    assert not wrong, "imports against the games table:\n" + "\n".join(sorted(set(wrong)))


def test_a_module_that_imports_the_face_or_a_family_above_is_seen(tmp_path: Path) -> None:
    """The checks above can fail: ``from pipeline import __version__`` is an import of the face,
    ``from pipeline import progress`` one of the progress layer, and an import of the N-player
    family from the one-player family is against the games table."""
    module = tmp_path / "m.py"
    module.write_text(
        "from pipeline import __version__, progress\n"
        "def f():\n    from pipeline.games.nplayer.custom import NPLAYER_OPTIONS\n"
    )
    found = [t for t, _ in imports_of(module)]
    assert found == ["pipeline", "pipeline.progress", "pipeline.games.nplayer.custom"]
    assert layer_of("pipeline") == LAYERS.index("face")
    assert game_part_of("pipeline.games.nplayer.custom") == "nplayer"
    assert "nplayer" not in GAME_PARTS["shutbox"][1]


@pytest.mark.parametrize("type_hints", [False, True], ids=["run-time", "with-type-hints"])
def test_no_import_circles(type_hints: bool) -> None:
    """No circle of imports, counting those made only for type hints (``if TYPE_CHECKING:``)
    too: a circle of annotations is still two modules that cannot be read apart."""
    graph: dict[str, set[str]] = {}
    modules = all_modules()
    for name, path in modules.items():
        found = imports_of(path, run_time_only=not type_hints)
        graph[name] = {t for t, _ in found if t in modules and t != name}
    circles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_a_circle_of_type_hints_is_seen(tmp_path: Path) -> None:
    """The circle check reads imports under ``if TYPE_CHECKING:`` (and leaves them out of the
    run-time graph only when asked)."""
    module = tmp_path / "m.py"
    hint = "    from pipeline.graph import Graph\n"
    module.write_text(f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n{hint}")
    assert imports_of(module) == [("pipeline.graph", False)]
    assert imports_of(module, run_time_only=True) == []
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [sorted(c) for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative enough for a package of this size."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


HEAVY = ("polars", "duckdb", "numba", "pyarrow", "matplotlib")


def loaded_after(code: str) -> set[str]:
    """Top-level modules loaded by running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    ("code", "allowed"),
    [
        # the solvers' own kernels are compiled with numba; nothing else heavy
        ("import pipeline.solve.rank_order, pipeline.solve.value_iteration", {"numba"}),
        ("import pipeline", set()),
        ("import pipeline.games.registry as r; list(r.REGISTRY)", set()),
    ],
)
def test_light_imports_load_nothing_heavy(code: str, allowed: set[str]) -> None:
    assert not loaded_after(code) & (set(HEAVY) - allowed)


def test_solvers_load_no_game() -> None:
    probe = (
        "import pipeline.solve.rank_order, pipeline.solve.policy_eval, sys\n"
        "print([m for m in sys.modules if m.startswith('pipeline.games')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    assert done.stdout.strip() == "[]"


def test_help_loads_nothing_heavy_and_no_game() -> None:
    code = (
        "import sys\nsys.argv = ['stb-pipeline', '--help']\nfrom pipeline.cli.app import run\n"
        "run(['--help'])\n"
        "print('GAMES', [m for m in sys.modules if m.startswith('pipeline.games.') "
        "and not m.endswith(('registry', 'variants', 'custom', 'names')) and m.count('.') > 2])"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nprint('MODS', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    games_line = next(line for line in done.stdout.splitlines() if line.startswith("GAMES"))
    mods = next(line for line in done.stdout.splitlines() if line.startswith("MODS")).split()
    assert games_line == "GAMES []"
    assert not set(mods) & set(HEAVY)


@pytest.mark.parametrize(
    "args",
    [
        ["expect", "--variant", "classic", "12345"],
        ["move", "--variant", "classic", "12345", "7"],
        ["move", "--variant", "double-shutter", "000000000", "7"],
    ],
)
def test_a_lookup_loads_only_the_database_engine_and_numpy(built: Path, args: list[str]) -> None:
    """`expect` and `move` on a tile game read the rows they need by state id with DuckDB's
    compiled engine (the answer index's one-shot reads) and answer from the game's rules: no
    polars, pyarrow or numba, no thread pool, no rich for `expect`'s one plain line, and not the
    Python wrappers of the duckdb package where the engine can be imported without them (duckdb
    1.4 on); the index holds no variant's arrays."""
    code = (
        "import sys\nfrom pipeline.cli.app import run\n"
        f"code = run({[*args, '-d', str(built)]!r})\n"
        "print('CODE', code)\n"
        "print('MODS', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
        "from pipeline.store.states import HeldStates\n"
        "import gc\n"
        "print('HELD', sum(isinstance(o, HeldStates) for o in gc.get_objects()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    lines = {line.split(" ", 1)[0]: line for line in done.stdout.splitlines()}
    assert lines["CODE"] == "CODE 0", done.stderr
    mods = set(lines["MODS"].split()[1:])
    assert "_duckdb" in mods or "duckdb" in mods  # it did read the values
    assert "numpy" in mods
    assert lines["HELD"] == "HELD 0"  # read by id, not the variant whole
    heavy = {"polars", "pyarrow", "numba", "matplotlib", "concurrent"}
    if args[0] == "expect":
        heavy.add("rich")
    try:
        import _duckdb  # noqa: F401
    except ImportError:  # an older duckdb: the package is the only way in
        pass
    else:
        heavy.add("duckdb")
    assert not mods & heavy


def test_the_server_is_http_only() -> None:
    """`serve` parses, asks the library's one answer and renders: no module of the server
    imports a game (what a variant takes is asked of :mod:`pipeline.answer`)."""
    server = PACKAGE / "apps" / "server"
    found = [
        f"{path.name} -> {target}"
        for path in sorted(server.glob("*.py"))
        for target, _ in imports_of(path)
        if target.startswith("pipeline.games")
    ]
    assert not found, found
    # and the check sees a game import where there is one
    assert any(
        t.startswith("pipeline.games") for t, _ in imports_of(PACKAGE / "apps" / "explorer.py")
    )


#: The names of the tie tolerance itself (pipeline/solve/tolerance.py): outside pipeline/solve/
#: a module asks the rule (``is_tie``, ``pick``, ``best_of``, their array forms ``ties`` and
#: ``picks``, ``regret``), never the tolerance, so the rule cannot be written again.
TOLERANCE_NAMES = {"tie_tolerance", "TIE_TOLERANCE", "tolerance"}


def tie_formulas(source: str) -> list[str]:
    """Where ``source`` writes the tie rule itself: imports the tolerance from pipeline.solve,
    or scales 1e-12 by ``max(1, |x|)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipeline.solve"):
            found += [f"imports {a.name}" for a in node.names if a.name in TOLERANCE_NAMES]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            text = ast.unparse(node)
            scaled = re.search(r"\bmax(imum)?\(1(\.0)?, (np\.)?abs\(", text)
            if scaled and any(
                isinstance(c, ast.Constant) and c.value == 1e-12 for c in ast.walk(node)
            ):
                found.append(text)
    return found


def test_the_tie_rule_is_written_only_in_solve() -> None:
    """Every solver loop and every answer picks with :func:`pipeline.solve.tolerance.pick`; no
    module outside pipeline/solve/ writes the tolerance again, and the explorer's script has
    none (the library hands it its picks)."""
    found = [
        f"{path.relative_to(REPO)}: {where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "solve"
        for where in tie_formulas(path.read_text())
    ]
    assert not found, found
    for page in sorted((PACKAGE / "templates").glob("*.html")):
        text = page.read_text()
        assert "1e-12" not in text and "TIE" not in text, page.name


def test_a_tie_formula_is_seen() -> None:
    source = (
        "from pipeline.solve.tolerance import is_tie, tie_tolerance\n"
        "def f(v, best):\n    return abs(v - best) <= 1e-12 * max(1.0, abs(best))\n"
    )
    assert tie_formulas(source) == ["imports tie_tolerance", "1e-12 * max(1.0, abs(best))"]


#: A family's own applications (docs/architecture.md's table): modules that may name it.
FAMILY_APPS = {
    module.strip("` ").removesuffix("/"): row[2]
    for row in doc_table("application")
    for module in row[1].split(",")
}


def family_names() -> set[str]:
    """Every built-in family's name and the game its rules record (``shut-the-box``, ...)."""
    from pipeline.games.registry import FAMILIES, REGISTRY

    games = {
        v.family: str(v.make().rules()["game"])
        for v in REGISTRY.values()
        if not v.separate and v.builds_anywhere
    }
    return set(FAMILIES) | set(games.values())


def names_a_family(source: str, names: set[str]) -> list[str]:
    """Where ``source`` names a family: an import of one of its modules, or its name (or its
    game's) as a string that is not a docstring."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    found = []
    for node in ast.walk(tree):
        modules = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        found += [f"imports {m}" for m in modules if m.split(".")[2:3] and
                  m.startswith("pipeline.games.") and m.split(".")[2] in names]  # fmt: skip
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docs:
            found.append(repr(node.value))
    return found


def test_nothing_outside_games_names_a_family() -> None:
    """Issue 39: the server, the explorer, `play`, the snapshot of a data directory and the
    answers iterate over the registry; only a family's own applications name it."""
    names = family_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("games/") or any(
            rel == app or rel.startswith(app + "/") or rel == app + ".py" for app in FAMILY_APPS
        ):
            continue
        found += [f"{rel}: {what}" for what in names_a_family(path.read_text(), names)]
    assert not found, "\n".join(found)


def test_a_module_naming_a_family_is_seen() -> None:
    source = (
        '"""Knucklebones, in a docstring: fine."""\n'
        "from pipeline.games.nplayer.game import NPlayer\n"
        "KIND = 'shut-the-box'\n"
    )
    assert names_a_family(source, family_names()) == [
        "imports pipeline.games.nplayer.game",
        "'shut-the-box'",
    ]
    assert {"knucklebones", "shutbox", "shut-the-box"} <= family_names()
    assert FAMILY_APPS["apps/knucklebones"] == "knucklebones"


#: docs/architecture.md's table of the Knucklebones wing: each concern and the module holding it.
KNUCKLEBONES = {row[0]: PACKAGE / row[1].strip("`") for row in doc_table("concern")}
KNUCKLEBONES_CODE = sorted(
    p for p in PACKAGE.rglob("*.py") if "knucklebones" in p.relative_to(PACKAGE).as_posix()
)


def _where(concern: str) -> Path:
    """The module (or package) docs/architecture.md names for a Knucklebones concern."""
    found = [path for what, path in KNUCKLEBONES.items() if what.startswith(concern)]
    assert len(found) == 1, f"docs/architecture.md names no one module for {concern!r}"
    return found[0]


def gain_formulas(source: str) -> list[str]:
    """Where ``source`` writes a score change of a move: a sum of two differences of scores read
    from arrays (``(opp_score[m] - mover_score[p]) + (opp_score[p] - mover_score[m])``)."""

    def scores(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Sub)
            and all(
                isinstance(side, ast.Subscript) and ast.unparse(side.value).endswith("score")
                for side in (node.left, node.right)
            )
        )

    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.BinOp) and scores(node.left) and scores(node.right)
    ]


def name_prefixes(source: str) -> list[str]:
    """The players' name prefixes (``seed-d``, ``ours-d``, ``net-d``) ``source`` reads names by:
    as plain strings (a name made by an f-string, ``f"net-d{depth}"``, is written, not read)."""
    tree = ast.parse(source)
    made = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in ("seed-d", "ours-d", "net-d")
        and id(node) not in made
    ]


def test_the_knucklebones_wing_is_where_the_docs_say() -> None:
    """Each concern of the table lives where it says (the module or folder exists), and the
    three rules under it hold: the greedy gain is written in the rule book alone, the players'
    names are read in the engine alone, and nothing of games/knucklebones/ writes a file but
    the Dask solver's shard exchange (the artefacts' bytes go through the store's writer)."""
    for concern, path in KNUCKLEBONES.items():
        assert path.exists(), f"{concern}: {path} does not exist"
    rules, engine = _where("the rule book"), _where("every named player")
    gains = [
        f"{p.relative_to(PACKAGE)}: {g}"
        for p in KNUCKLEBONES_CODE
        if p != rules
        for g in gain_formulas(p.read_text())
    ]
    assert not gains, gains
    parsed = [
        p.relative_to(PACKAGE).as_posix()
        for p in KNUCKLEBONES_CODE
        if p != engine and name_prefixes(p.read_text())
    ]
    assert not parsed, f"player names read outside {engine.name}: {parsed}"
    writes = re.compile(r"os\.replace|open\([^)]*['\"]wb|savez|write_table|\.save\(")
    writers = [
        p.relative_to(PACKAGE).as_posix()
        for p in KNUCKLEBONES_CODE
        if p.is_relative_to(PACKAGE / "games")
        and p.name not in ("artefacts.py", "distributed.py")
        and writes.search(p.read_text())
    ]
    assert not writers, f"games/ writing files: {writers}"


def test_a_gain_written_again_is_seen() -> None:
    source = (
        "def g(p, q, t):\n"
        "    return (t.mover_score[q] - t.mover_score[p]) + (t.opp_score[p] - t.opp_score[q])\n"
    )
    assert gain_formulas(source) == [
        "t.mover_score[q] - t.mover_score[p] + (t.opp_score[p] - t.opp_score[q])"
    ]
    assert gain_formulas("x = (a[1] - b[2]) + (c - d)\n") == []
    assert name_prefixes('p = "ours-d"\nq = f"net-d{3}"\n') == ["ours-d"]


if __name__ == "__main__":  # python -m tests.test_architecture: the floors the code has
    code = layer_imports()
    for layer, floor in floors(code).items():
        print(f"{floor}  {layer:8} imports {', '.join(sorted(code[layer], key=LAYERS.index))}")
    print(f"{floor_of(sorted((REPO / 'benchmarks').rglob('*.py')))}  benchmarks/")
