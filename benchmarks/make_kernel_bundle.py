"""Make the kernels the package ships compiled again (``just kernels``; issue 49).

Runs the commands of :data:`WORKLOAD`, each a process of its own, with an empty numba cache, the
shipped bundle off and numba's CPU the portable target (:mod:`pipeline._kernel_target`), then
keeps every cache file they wrote for a module of the package as ``pipeline/solve/kernel_bundle/``
(a folder a module), with a manifest: the versions they serve, the commands, the SHA-256 of each
file and of every module the kernels are made of (:func:`pipeline.solve.shipped.stale` compares
them; a test fails while they differ). About four minutes on two cores.

Usage: python benchmarks/make_kernel_bundle.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.solve import shipped  # noqa: E402

#: The commands whose kernels are shipped, each run once in an empty folder: the README's first
#: commands (every standard variant's build, a custom box, the strategy benchmark, the full
#: Knucklebones game's search, which the server's answers share), a box large enough to be
#: streamed, the exact Knucklebones solver, its players' games and the strategy search.
WORKLOAD: tuple[tuple[str, ...], ...] = (
    ("build", "--variant", "all", "-q"),
    ("build", "--tiles", "12", "--dice", "3", "-q"),
    ("build", "--tiles", "16", "--dice", "3", "--objective", "score", "-q"),
    ("benchmark", "--games", "2000", "-q"),
    ("knucklebones", "solve", "44_/1__/___", "2__/___/___", "4"),
    ("knucklebones", "solve-exact", "--columns", "2", "--rows", "2", "--faces", "4"),
    ("knucklebones", "benchmark", "--games", "4", "--depths", "1,2", "-q"),
    ("strategies", "--variant", "lever", "-q"),
)


def make(workload: Iterable[tuple[str, ...]] = WORKLOAD) -> dict[str, Any]:
    """Run ``workload`` with an empty cache and the bundle off, and keep what it compiled as the
    bundle (replacing the old one only once the new one is whole)."""
    from numba.core.caching import _CacheLocator

    package, bundle = shipped.PACKAGE, shipped.BUNDLE
    with tempfile.TemporaryDirectory() as tmp:
        cache, work = Path(tmp, "cache"), Path(tmp, "work")
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
        env.update(NUMBA_CACHE_DIR=str(cache), **{shipped.SWITCH: "off"})
        env["PYTHONPATH"] = os.pathsep.join([str(package.parent), env.get("PYTHONPATH", "")])
        run = "import sys; from pipeline.cli.app import run; sys.exit(run(sys.argv[1:]))"
        for command in workload:
            subprocess.run([sys.executable, "-c", run, *command], cwd=work, env=env, check=True)
        # numba's folder for each of the package's source folders (its user-provided locator)
        folders = {
            _CacheLocator.get_suitable_cache_subpath(str(p)): p.parent
            for p in package.rglob("*.py")
        }
        staging = Path(tmp, "bundle")
        files: dict[str, str] = {}
        modules: set[Path] = set()
        for found in sorted(cache.rglob("*.nb[ic]")):
            folder = folders.get(found.parent.name)
            source = folder / (found.name.split(".", 1)[0] + ".py") if folder else None
            if source is None or not source.is_file():
                continue
            rel = source.relative_to(package.parent).with_suffix("")
            name = f"{'.'.join(rel.parts)}/{found.name}"
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found, staging / name)
            files[name] = shipped.sha256(found)
            modules.add(source)
        guarded = {
            p.relative_to(package).as_posix(): shipped.sha256(p)
            for p in sorted(shipped.closure(modules))
            if p.relative_to(package).as_posix() not in shipped.UNGUARDED
        }
        manifest = {
            "versions": shipped.versions(),
            "workload": [list(c) for c in workload],
            "guarded": guarded,
            "files": files,
        }
        text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        (staging / "manifest.json").write_text(text, encoding="utf-8")
        old = bundle.with_name(bundle.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if bundle.exists():
            bundle.rename(old)
        shutil.copytree(staging, bundle)
        shutil.rmtree(old, ignore_errors=True)
    return manifest


if __name__ == "__main__":
    made = make()
    size = sum((shipped.BUNDLE / n).stat().st_size for n in made["files"])
    print(f"{len(made['files'])} files, {size / 1e6:.1f} MB, {len(made['guarded'])} modules")
