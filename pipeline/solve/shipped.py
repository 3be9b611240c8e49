"""Kernels shipped compiled with the package, so that a person's first command does not compile.

numba compiles each kernel at its first call and keeps it on disk (:mod:`pipeline.solve.compiled`),
so a first command spends seconds compiling (a first search of the largest board about 12 CPU
seconds of 14). The package carries the kernels its commands use, compiled for the portable CPU of
:mod:`pipeline._kernel_target`, in ``pipeline/solve/kernel_bundle/``: numba's own cache files, a
folder a module, and a manifest (``manifest.json``) saying what they were made from.

Where numba finds no kernel in its cache, :func:`install` makes it look in the bundle before it
compiles, and keeps what it finds in its cache, so the bundle is read once. The bundle serves only
where it was made for exactly this code: the same numba, llvmlite and Python, the same CPU target,
and the same bytes of every module the kernels are made of (their own module, checked by numba's
cache, and each module they import from the package, checked here against the manifest); its files
are checked against their SHA-256 before numba unpickles them. Anywhere else numba compiles, as it
did before. ``STB_KERNEL_BUNDLE=off`` turns the bundle off (the maker does, to compile afresh).

``python benchmarks/make_kernel_bundle.py`` makes the bundle again (``just kernels``): it runs
the first commands with an empty cache and keeps what they compiled. A test fails while the
bundle no longer matches the code (:func:`stale`), naming that command.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline import _kernel_target

PACKAGE = Path(__file__).resolve().parent.parent
BUNDLE = Path(__file__).resolve().with_name("kernel_bundle")
MANIFEST = BUNDLE / "manifest.json"
SWITCH = "STB_KERNEL_BUNDLE"

#: Modules every kernel module imports that hold no kernel code: the package's face, the CPU's
#: choice (numba's own cache key holds the CPU) and this loader. An edit of them leaves the
#: compiled kernels as they were.
UNGUARDED = frozenset({"__init__.py", "_version.py", "_kernel_target.py", "solve/shipped.py"})


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def versions() -> dict[str, str]:
    import llvmlite  # type: ignore[import-untyped]
    import numba

    return {
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "python": "{}.{}".format(*sys.version_info[:2]),
        "cpu": _kernel_target.TARGET,
    }


@functools.cache
def _manifest() -> dict[str, Any] | None:
    """The bundle's manifest where the bundle serves this process, else None (checked once)."""
    if os.environ.get(SWITCH, "").lower() in ("off", "0", "no"):
        return None
    from numba.core import config

    try:
        manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("versions") != versions():
            return None
        if (config.CPU_NAME, config.CPU_FEATURES) != (_kernel_target.TARGET, ""):  # type: ignore[attr-defined]
            return None
        for name, digest in manifest["guarded"].items():
            if sha256(PACKAGE / name) != digest:
                return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return manifest


def _load(cache: Any, sig: Any, target_context: Any) -> Any:
    """The compiled kernel for ``sig`` from the bundle, kept in numba's cache too; None where
    the bundle has none (or cannot serve)."""
    from numba.core.caching import IndexDataCacheFile

    manifest = _manifest()
    module = getattr(cache._py_func, "__module__", "") or ""
    if manifest is None or not module.startswith("pipeline."):
        return None
    folder = BUNDLE / module
    base = cache._impl.filename_base
    files = manifest["files"]
    names = [n for n in files if n.startswith(f"{module}/{base}.")]
    if not names or any(sha256(BUNDLE / n) != files[n] for n in names):
        return None
    # numba's own stamp: the module's bytes, so a module edited since the bundle misses here
    shipped = IndexDataCacheFile(str(folder), base, cache._cache_file._source_stamp)
    key = cache._index_key(sig, target_context.codegen())
    raw = shipped.load(key)
    if raw is None:
        return None
    try:
        cache._impl.locator.ensure_cache_path()
        cache._cache_file.save(key, raw)
    except OSError:
        pass  # a read-only cache: the bundle serves again next time
    return cache._impl.rebuild(target_context, raw)


def install() -> None:
    """Make numba look in the bundle before it compiles a kernel of the package (once)."""
    from numba.core import caching

    original = caching.Cache._load_overload
    if getattr(original, "bundled", False):
        return

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        data = original(self, sig, target_context)
        if data is None and self._enabled:
            try:
                data = _load(self, sig, target_context)
            except Exception:  # anything wrong with the bundle: numba compiles instead
                data = None
        return data

    load_overload.bundled = True  # type: ignore[attr-defined]
    caching.Cache._load_overload = load_overload  # type: ignore[method-assign]


# -- what the bundle is made of (benchmarks/make_kernel_bundle.py makes it) -----------------


def imports(path: Path) -> set[Path]:
    """The package's modules that ``path`` imports at its top level: all that a kernel can read
    (an import inside a function serves that function only, and kernels import nothing)."""
    found: set[Path] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if not name.startswith("pipeline"):
                continue
            rel = PACKAGE.joinpath(*name.split(".")[1:])
            for candidate in (rel.with_name(rel.name + ".py"), rel / "__init__.py"):
                if candidate.is_file():
                    found.add(candidate)
    return found


def closure(modules: Iterable[Path]) -> set[Path]:
    """``modules`` and every module of the package they import, at any remove."""
    seen: set[Path] = set()
    todo = list(modules)
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo.extend(imports(path) - seen)
    return seen


def stale() -> list[str]:
    """Why the bundle does not match the code (empty where it does): the guarded modules and
    bundle files whose bytes changed, and the versions that differ."""
    try:
        manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
        guarded, files = dict(manifest["guarded"]), dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"no readable manifest ({MANIFEST.name}): {exc}"]
    problems = [
        f"{name}: changed since the bundle was made"
        for name, digest in guarded.items()
        if not (PACKAGE / name).is_file() or sha256(PACKAGE / name) != digest
    ]
    problems += [
        f"kernel_bundle/{name}: damaged"
        for name, digest in files.items()
        if not (BUNDLE / name).is_file() or sha256(BUNDLE / name) != digest
    ]
    return problems
