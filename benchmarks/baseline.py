"""The baseline a benchmark runs beside, in the same run: another version of the project.

Every benchmark that compares takes ``--base``: a git ref (``main`` unless told otherwise: the
last release of main, what a change is measured against) or a checkout's directory. A ref is
extracted with ``git archive REF | tar -x`` into ``$STB_BENCH_BASES`` (default: the system's
temporary folder, ``stb-bench-base/<commit>/``), once per commit, so it works on a fresh clone
and leaves the working tree alone; the baseline then runs from there (``PYTHONPATH``: its own
package, with the venv's dependencies), compiling its own bytecode and numba kernels beside its
files. ``--no-base`` runs the working tree alone. ``--baseline-repo DIR``, the older name, is
still read.

The figures mean something only as ratios: this machine's load moves absolute times by a
factor of two or more (two cores shared with other jobs), so each benchmark interleaves the
two versions (rounds taking turns) and prints medians and ``this / base``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BASE = "main"


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--base REF_OR_DIR`` (default main), ``--no-base``, and ``--baseline-repo DIR``."""
    parser.add_argument(
        "--base",
        default=DEFAULT_BASE,
        help="the version to run beside this one: a git ref (default main, extracted with git "
        "archive) or a checkout's directory",
    )
    parser.add_argument("--baseline-repo", dest="base", help=argparse.SUPPRESS)
    parser.add_argument("--no-base", action="store_true", help="run this checkout alone")


def checkout(args: argparse.Namespace) -> Path | None:
    """The baseline's directory (None with ``--no-base``); SystemExit naming a ref that is not
    one."""
    if getattr(args, "no_base", False) or not args.base:
        return None
    return resolve(str(args.base))


def resolve(spec: str) -> Path:
    """A checkout's directory, or the files of git ref ``spec`` extracted once."""
    as_dir = Path(spec).expanduser()
    if as_dir.is_dir():
        if not (as_dir / "pipeline").is_dir():
            raise SystemExit(f"error: {as_dir} is not a checkout (no pipeline/ in it)")
        return as_dir.resolve()
    found = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if found.returncode != 0:
        raise SystemExit(f"error: --base {spec!r} is neither a directory nor a git ref here")
    commit = found.stdout.strip()
    root = Path(os.environ.get("STB_BENCH_BASES") or Path(tempfile.gettempdir()) / "stb-bench-base")
    target = root / commit[:12]
    if not (target / "pipeline").is_dir():
        part = root / f".{commit[:12]}.{os.getpid()}"
        part.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(
            ["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE
        )
        subprocess.run(["tar", "-x", "-C", str(part)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"error: git archive {spec} failed")
        os.replace(part, target)  # whole or not at all: another run may extract it too
    return target


def label(base: Path) -> str:
    """How a table names the baseline: its commit where it is an extracted ref."""
    return f"base {base.name}"


def env(repo: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a process of ``repo`` (default: this checkout): its package first on
    the path, bytecode written (a fresh install compiles it: a benchmark that recompiled every
    module would time the compiler)."""
    out = {**os.environ, "PYTHONPATH": str(repo or REPO), **extra}
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out
