"""Start-up cost of the command line: `--help`, and a one-shot lookup (`expect`, `move`) of every
family on built tables, beside another checkout's (issues 13, 30 and 49: a one-shot `expect`
within 0.15 CPU s, the last lines say whether it is met).

Each command runs as a whole process (``python -m pipeline``, with ``PYTHONPATH`` the checkout),
interleaved with the same command of the baseline (``--base``: main unless told otherwise, see
``benchmarks/baseline.py``) and a bare ``python -c pass``, in the same loop so that a noisy
machine slows them alike. It prints each command's median and fastest CPU time, the ratio to
the baseline checkout's and to ``python -c pass``, and the peak memory of each.

The families: classic, double-shutter, two-player, four-player, a 16-tile box named by its
rules, two-player-stake and knucklebones-2x2 (its `expect`, and its move through `knucklebones
solve --variant`); `expect` of each way a position is written (tiles, the default variant,
Double Shutter's digits and its rows, a two-player and an N-player seat), and `expect` of each
opt-in Knucklebones board built in the data directory (2x3, 3x2, 3x3-d4: the biggest lookups;
``--boards`` builds them, some 5 minutes more). The last lines give issue 49's verdict for each
`expect` and the worst of them.

    python benchmarks/bench_startup.py                      # builds them (~1 min), beside main
    python benchmarks/bench_startup.py --boards              # and the opt-in boards
    python benchmarks/bench_startup.py --data-dir DIR --base /tmp/base --rounds 15
                                    # DIR built first where it holds no build (and --boards adds)

``--data-dir`` reuses a directory where they are built:

    stb-pipeline build --variant classic,double-shutter,two-player,four-player,\\
        two-player-stake,knucklebones-2x2 -d DIR && stb-pipeline build --tiles 16 --dice 3 -d DIR
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baseline  # benchmarks/baseline.py: the version run beside

REPO = Path(__file__).resolve().parent.parent
BOX16 = "stb-16t-3d6-shut"
VARIANTS = "classic,double-shutter,two-player,four-player,two-player-stake,knucklebones-2x2"
FOUR = ["--player", "3", "--best-score", "11", "--best-count", "1"]
#: Issue 49's target for a one-shot `expect` (CPU seconds of the whole process, median): the
#: console script's lean door answers it from the build's lookup (pipeline/cli/lean.py).
EXPECT_TARGET_S = 0.15
#: (label, arguments after `python -m pipeline`); "-d" is followed by the data directory.
COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("classic expect", ["expect", "-v", "classic", "123456789"]),
    ("expect 1,2,3 (the default variant)", ["expect", "1,2,3"]),
    ("classic move", ["move", "-v", "classic", "12345", "7"]),
    ("double-shutter expect", ["expect", "-v", "double-shutter", "000000000"]),
    (
        "double-shutter expect (rows)",
        ["expect", "-v", "double-shutter", "front=1234 back=6789"],
    ),
    ("double-shutter move", ["move", "-v", "double-shutter", "000000000", "7"]),
    ("two-player expect (--p1-score)", ["expect", "-v", "two-player", "12345", "--p1-score", "7"]),
    ("four-player expect", ["expect", "-v", "four-player", "134", *FOUR]),
    ("four-player move", ["move", "-v", "four-player", "134", "4", *FOUR]),
    (f"{BOX16} expect", ["expect", "-v", BOX16, "1,2,3,16"]),
    (f"{BOX16} move", ["move", "-v", BOX16, "1,2,3,16", "9"]),
    ("two-player-stake expect", ["expect", "-v", "two-player-stake", "12345"]),
    ("two-player-stake move", ["move", "-v", "two-player-stake", "12345", "7"]),
    ("knucklebones-2x2 expect", ["expect", "-v", "knucklebones-2x2", "4_/1_;_/3_"]),
    (
        "knucklebones-2x2 move (knucklebones solve)",
        ["knucklebones", "solve", "4_/1_", "_/3_", "4", "-v", "knucklebones-2x2"],
    ),
]


#: The opt-in Knucklebones boards (minutes each to build, not in `--variant all`): their
#: `expect` rows are timed where the data directory holds them (``--boards`` builds them).
BOARDS: list[tuple[str, str]] = [
    ("knucklebones-2x3", "4__/1__;___/3__"),
    ("knucklebones-3x2", "4_/1_/__;__/3_/__"),
    ("knucklebones-3x3-d4", "4__/1__/___;___/3__/___"),
]


def commands(data: Path) -> list[tuple[str, list[str]]]:
    """:data:`COMMANDS`, and `expect` of each opt-in board built in ``data``."""
    built = [
        (f"{name} expect", ["expect", "-v", name, position])
        for name, position in BOARDS
        if (data / "variants" / name / "states.parquet").is_file()
    ]
    return [*COMMANDS, *built]


def run_once(argv: list[str], repo: Path) -> tuple[float, float] | None:
    """CPU seconds (user and system: what a busy machine's waits do not inflate) and peak RSS
    (MB) of one run of ``argv`` as a child process, with ``repo``'s package first on the path;
    None when it fails."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # (users run installed code whose bytecode pip compiled; the warm-up writes it here too)
    env.update(PYTHONPATH=str(repo), STB_QUIET="1")
    pid = os.fork()
    if pid == 0:  # the child: become the command
        try:
            os.chdir(repo)  # `python -m` puts the working directory first on the path
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    seconds = usage.ru_utime + usage.ru_stime
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    return seconds, usage.ru_maxrss / 1024


def build(data: Path, boards: bool) -> None:
    """The families' tables (and with ``boards`` the opt-in boards), built with this checkout."""
    env = baseline.env(None, STB_QUIET="1")
    more = [["--variant", ",".join(name for name, _ in BOARDS)]] if boards else []
    for args in (["--variant", VARIANTS], ["--tiles", "16", "--dice", "3"], *more):
        subprocess.run(
            [sys.executable, "-m", "pipeline", "build", *args, "--data-dir", str(data)],
            check=True, capture_output=True, env=env, cwd=REPO,
        )  # fmt: skip


def measure(data: Path, baseline: Path | None, rounds: int) -> None:
    python = [sys.executable, "-c", "pass"]
    asked = commands(data)
    runs: dict[tuple[str, str], list[tuple[float, float] | None]] = {}
    repos = {"new": REPO, **({"old": baseline} if baseline is not None else {})}

    def argv(args: list[str]) -> list[str]:
        cmd = [sys.executable, "-m", "pipeline", *args]
        return cmd if args == ["--help"] else [*cmd, "-d", str(data)]

    for _, args in asked:  # warm-up: bytecode, numba's cache, the OS's file cache
        for repo in repos.values():
            run_once(argv(args), repo)
    for _ in range(rounds):
        runs.setdefault(("python -c pass", "new"), []).append(run_once(python, REPO))
        for label, args in asked:
            for which, repo in repos.items():
                runs.setdefault((label, which), []).append(run_once(argv(args), repo))

    def median(label: str, which: str) -> tuple[float, float, float] | None:
        got = runs.get((label, which), [])
        if not got or any(r is None for r in got):
            return None
        secs = [r[0] for r in got if r is not None]
        return statistics.median(secs), min(secs), max(r[1] for r in got if r is not None)

    base = median("python -c pass", "new")
    assert base is not None
    old_name = baseline.name if baseline is not None else "-"
    head = (
        f"{'command':<44} {'new s':>7} {'min':>6} {'MB':>5} {'old s':>7} {'min':>6} {'MB':>5} "
        f"{'new/old':>8} {'x python':>9}"
    )
    print(f"new: {REPO}; old: {baseline or '(none)'}; {rounds} rounds, median CPU seconds")
    print(head)
    print(f"{'python -c pass (baseline)':<44} {base[0]:>7.3f} {base[1]:>6.3f} {base[2]:>5.0f}")
    for label, _ in asked:
        new, old = median(label, "new"), median(label, "old")
        cells = f"{label:<44} "
        cells += f"{new[0]:>7.3f} {new[1]:>6.3f} {new[2]:>5.0f} " if new else f"{'failed':>20} "
        if old:
            cells += f"{old[0]:>7.3f} {old[1]:>6.3f} {old[2]:>5.0f} "
        else:
            cells += f"{'failed' if baseline else '-':>20} "
        cells += f"{new[0] / old[0]:>8.2f} " if new and old else f"{'-':>8} "
        cells += f"{new[0] / base[0]:>9.1f}" if new else ""
        print(cells)
    print(f"old = {old_name}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    worst: tuple[float, str] | None = None
    for label, args in asked:
        found = median(label, "new")
        if args[0] != "expect" or found is None:
            continue
        verdict = "met" if found[0] <= EXPECT_TARGET_S else "missed"
        print(
            f"target (issue 49): a one-shot {label} within {EXPECT_TARGET_S} CPU s: "
            f"{found[0]:.3f} (min {found[1]:.3f}), {verdict}"
        )
        worst = max(worst or (found[0], label), (found[0], label))
    if worst is not None:
        verdict = "met" if worst[0] <= EXPECT_TARGET_S else "missed"
        print(f"worst one-shot expect: {worst[1]}, {worst[0]:.3f}: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, help="where the families are built")
    parser.add_argument(
        "--boards", action="store_true", help="also build the opt-in boards (minutes)"
    )
    baseline.add_options(parser)
    args = parser.parse_args()
    base = baseline.checkout(args)
    if args.data_dir is not None:
        data = args.data_dir.resolve()
        if args.boards or not (data / "manifest.json").exists():
            build(data, args.boards)  # (into a new folder, or what --boards adds: kept there)
        measure(data, base, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        build(data, args.boards)
        measure(data, base, args.rounds)


if __name__ == "__main__":
    main()
