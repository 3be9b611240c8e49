"""The kernels shipped compiled with the package (pipeline/solve/shipped.py): they match the code,
a first run loads them instead of compiling, and a damaged or foreign bundle is never trusted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import _kernel_target
from pipeline.solve import shipped

# A first run in a fresh process: the number of kernels numba compiled (it loaded the others),
# whether the bundle serves there, and the command's output.
PROBE = """
import sys
import pipeline
from numba.core import event
from pipeline.solve import shipped

compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
from pipeline.cli.app import run
code = run(sys.argv[1:])
print("compiled", len(compiled), "serves", shipped._manifest() is not None, "code", code)
"""


def _first_run(tmp_path: Path, args: list[str], root: Path, **env: str) -> str:
    cache = tmp_path / "numba-cache"
    shutil.rmtree(cache, ignore_errors=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
    environ.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(root), STB_QUIET="1", **env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _counts(out: str) -> tuple[int, bool]:
    words = out.strip().splitlines()[-1].split()
    return int(words[1]), words[3] == "True"


def _portable_host() -> bool:
    """Whether this machine runs the bundle's CPU target (the bundle serves only there)."""
    return (
        sys.platform == "linux"
        and os.uname().machine == "x86_64"
        and _kernel_target._host_flags() >= _kernel_target._NEEDED
    )


def test_the_bundle_matches_the_code() -> None:
    """Every module the shipped kernels are made of is as it was when they were compiled."""
    problems = shipped.stale()
    assert problems == [], (
        "the shipped kernels are stale: run `just kernels`"
        " (python benchmarks/make_kernel_bundle.py)\n" + "\n".join(problems)
    )


def test_the_bundle_holds_the_first_commands_kernels() -> None:
    manifest = json.loads(shipped.MANIFEST.read_text())
    modules = {name.split("/")[0] for name in manifest["files"]}
    for module in (
        "pipeline.games.knucklebones.players.search",
        "pipeline.solve.batch",
        "pipeline.games.shutbox.stream_kernels",
        "pipeline.games.knucklebones.exact.cpu",
    ):
        assert module in modules
    assert manifest["versions"]["cpu"] == _kernel_target.TARGET


def test_a_first_full_game_search_loads_instead_of_compiling(tmp_path: Path) -> None:
    """README: the full game's search, from an empty numba cache: no kernel compiled where the
    bundle serves (this machine runs x86-64-v3 and numba is the bundle's), the same answer."""
    args = ["knucklebones", "solve", "44_/1__/___", "2__/___/___", "4"]
    out = _first_run(tmp_path, args, shipped.PACKAGE.parent)
    compiled, serves = _counts(out)
    assert "best column 3: win 0.6195  score difference +6.120" in out
    versions = json.loads(shipped.MANIFEST.read_text())["versions"]
    if _portable_host() and versions == shipped.versions():
        assert serves and compiled == 0
    else:
        assert not serves and compiled > 0


def test_a_damaged_bundle_is_not_trusted(tmp_path: Path) -> None:
    """A bundle file whose bytes changed is not unpickled: numba compiles that kernel, and the
    answer is the same (a copy of the package with the policy evaluation's kernels damaged)."""
    root = tmp_path / "copy"
    shutil.copytree(
        shipped.PACKAGE, root / "pipeline", ignore=shutil.ignore_patterns("__pycache__")
    )
    bundle = root / "pipeline" / shipped.BUNDLE.relative_to(shipped.PACKAGE)
    damaged = sorted(bundle.glob("pipeline.solve.policy_eval/*.nbc"))
    assert damaged
    for path in damaged:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    out = _first_run(tmp_path, ["build", "--variant", "classic", "-q"], root)
    compiled, serves = _counts(out)
    assert "code 0" in out
    if serves:  # the rest of the bundle still serves: only the damaged module compiled
        assert 0 < compiled < 10
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "expect", "-v", "classic", "123456789"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )
    assert abs(float(done.stdout.split()[0]) - 0.07143162230560596) < 1e-12, done.stderr


def test_an_unreadable_manifest_turns_the_bundle_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "manifest.json"
    for text in ("{not json", "[]", '{"versions": 3}', ""):
        bad.write_text(text)
        monkeypatch.setattr(shipped, "MANIFEST", bad)
        shipped._manifest.cache_clear()
        assert shipped._manifest() is None
        assert shipped.stale()
    shipped._manifest.cache_clear()


def test_the_switch_turns_the_bundle_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(shipped.SWITCH, "off")
    shipped._manifest.cache_clear()
    assert shipped._manifest() is None
    shipped._manifest.cache_clear()


def test_every_cached_kernel_module_makes_numba_look_in_the_bundle() -> None:
    """A module that defines a cached kernel imports pipeline.solve.compiled (which installs the
    bundle's loader), itself or through a module it imports."""
    loader = shipped.PACKAGE / "solve" / "compiled.py"
    for path in sorted(shipped.PACKAGE.rglob("*.py")):
        text = path.read_text()
        if "cache=True" in text or "@kernel" in text or "@inline_kernel" in text:
            if path == loader:
                continue
            assert loader in shipped.closure([path]), path


def test_the_cpu_target_is_chosen_only_where_nothing_else_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    _kernel_target.choose()  # numba is loaded in this process: nothing changes
    assert "NUMBA_CPU_NAME" not in os.environ
    monkeypatch.delitem(sys.modules, "numba")
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
    _kernel_target.choose()  # the person's own choice stands
    assert os.environ["NUMBA_CPU_NAME"] == "generic"
    monkeypatch.delenv("NUMBA_CPU_NAME")
    monkeypatch.setattr(_kernel_target, "_host_flags", lambda: frozenset({"avx", "sse2"}))
    _kernel_target.choose()  # a machine without AVX2: numba's own host target
    assert "NUMBA_CPU_NAME" not in os.environ
    monkeypatch.setattr(_kernel_target, "_host_flags", lambda: _kernel_target._NEEDED)
    host = os.uname_result(("Linux", "host", "", "", "x86_64"))
    monkeypatch.setattr(_kernel_target.os, "uname", lambda: host)
    monkeypatch.setattr(_kernel_target.sys, "platform", "linux")
    _kernel_target.choose()
    assert os.environ["NUMBA_CPU_NAME"] == _kernel_target.TARGET
    assert os.environ["NUMBA_CPU_FEATURES"] == ""
