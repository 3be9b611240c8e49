"""The package's layers hold at run time (issue 13; docs/architecture.md).

Every import between the package's modules, at module level or inside a function, must point
down the list of layers; there are no import circles; and importing the solvers, or asking the
CLI for help, loads neither polars, duckdb nor any game.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "pipeline"

#: Lowest first. A module may import its own layer and the layers before it.
LAYERS = (
    "errors",
    "progress",
    "graph",
    "solve",
    "games",
    "store",
    "stages",
    "analysis",
    "answer",
    "apps",
    "api",
    "cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] == "__main__":
        return None  # the package's face (lazy API) and `python -m pipeline`
    return LAYERS.index(parts[1])


def imports_of(path: Path, run_time_only: bool = False) -> list[tuple[str, bool]]:
    """(module imported, at module level?) for every import of a pipeline module in ``path``.

    With ``run_time_only``, imports under ``if TYPE_CHECKING:`` (for type hints) are left out.
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
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("pipeline.") and _exists(name):
                found.append((name, id(node) in top))
    return found


def _exists(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def test_every_module_has_a_layer() -> None:
    for name in all_modules():
        parts = name.split(".")
        if len(parts) > 1 and parts[1] != "__main__":
            assert parts[1] in LAYERS, f"{name} is in no layer: add it to docs/architecture.md"


def test_imports_point_down() -> None:
    upward = []
    for name, path in all_modules().items():
        mine = layer_of(name)
        if mine is None:
            continue
        for target, _ in imports_of(path):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(sorted(set(upward)))


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


def test_a_lookup_loads_only_the_database_engine_and_numpy(built: Path) -> None:
    """`expect` on a tile game reads the variant's values with DuckDB's compiled engine into
    numpy arrays (the answer index) and answers from its rules: no polars, pyarrow or numba, no
    rich for its one plain line, and not the Python wrappers of the duckdb package where the
    engine can be imported without them (duckdb 1.4 on)."""
    code = (
        "import sys\nfrom pipeline.cli.app import run\n"
        f"code = run(['expect', '--variant', 'classic', '12345', '-d', {str(built)!r}])\n"
        "print('CODE', code)\n"
        "print('MODS', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    lines = {line.split(" ", 1)[0]: line for line in done.stdout.splitlines()}
    assert lines["CODE"] == "CODE 0", done.stderr
    mods = set(lines["MODS"].split()[1:])
    assert "_duckdb" in mods or "duckdb" in mods  # it did read the values
    assert "numpy" in mods
    heavy = {"polars", "pyarrow", "numba", "matplotlib", "rich"}
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
