# Tasks for stb-pipeline. `just --list` shows them.

# Build every variant's tables into data/
build *ARGS:
    stb-pipeline build --variant all {{ARGS}}

# Check the built tables against the data contracts (queries/contracts/)
verify *ARGS:
    stb-pipeline verify {{ARGS}}

# Run the whole test suite
test *ARGS:
    python -m pytest {{ARGS}}

# Print the solver benchmark table (states, moves, seconds, peak memory)
bench:
    python benchmarks/bench_solver.py

# Compile the kernels the package ships again (pipeline/solve/kernel_bundle/; a test says when)
kernels:
    python benchmarks/make_kernel_bundle.py

# Lint and check formatting
lint:
    ruff check .
    ruff format --check .

# Double Shutter timings (add --exact for the exact-fraction cross-check, about 35 s)
bench-double-shutter *ARGS:
    python benchmarks/bench_double_shutter.py {{ARGS}}

# Monte Carlo speed: games per second per strategy beside the interpreted loop, and `stb-pipeline benchmark` from the shell
bench-sim *ARGS:
    python benchmarks/bench_simulation.py {{ARGS}}
# Knucklebones search: decision time by depth, our evaluation against the Rust solver's
bench-knucklebones:
    python benchmarks/bench_knucklebones.py

# Knucklebones players against exact values on held-out positions (issue 42): share optimal, regret, ms a move
bench-knucklebones-players *ARGS:
    python benchmarks/bench_knucklebones_players.py {{ARGS}}

# Knucklebones exact solver (solve-exact): compact sweeps against full sweeps and the graph solver
bench-knucklebones-vi *ARGS:
    python benchmarks/bench_knucklebones_vi.py {{ARGS}}

# Knucklebones exact solver on one GPU against the CPU solver (3x2, 3x3-d5, the full game); without a GPU: a simulator check
bench-knucklebones-gpu *ARGS:
    python benchmarks/bench_knucklebones_gpu.py {{ARGS}}

# The full Knucklebones game's lean states table through the build's writer: rows a second and bytes a row, beside the shared schema's
bench-lean-write *ARGS:
    python benchmarks/bench_lean_write.py {{ARGS}}

# Knucklebones boards through `build`: the graph-free build against the graph build (minutes, 7 GB)
bench-knucklebones-build *ARGS:
    python benchmarks/bench_knucklebones_build.py {{ARGS}}

# Whole builds (stb-pipeline build --tiles N --dice K) beside a plain numpy solve: time, peak memory; --rebuild: a rebuild over existing tables against a fresh build
bench-build *ARGS:
    python benchmarks/bench_build.py {{ARGS}}

# A first run (empty numba cache) against the second of build, benchmark, serve and knucklebones solve, and builds beside their solve alone (20x3, 24x3, --variant all), beside --base (default main; about 20 minutes)
bench-first-run *ARGS:
    python benchmarks/bench_first_run.py {{ARGS}}

# The streamed solver alone, 12..24 tiles, against a plain numpy solve in the same run
bench-stream *ARGS:
    python benchmarks/bench_stream.py {{ARGS}}

# Start-up cost of the command line in CPU seconds (--help, expect and move of every family) beside --base (default main) and a bare `python -c pass`
bench-startup *ARGS:
    python benchmarks/bench_startup.py {{ARGS}}

# N-player builds (four players, six players, 12 tiles) beside the two-player build: seconds, peak memory
bench-nplayer *ARGS:
    python benchmarks/bench_nplayer.py {{ARGS}}

# The server under issue 30's mix, one and two processes, beside --base (default main; a git ref or a checkout) in the same run, windows taking turns: medians, ratios, issue 49's targets (builds the mix for each; about 5 minutes)
bench-serve *ARGS:
    python benchmarks/bench_serve.py --compare {{ARGS}}

# The local server under load on big variants: 50 clients x 30 s per variant (build them first; see the script)
bench-serve-big *ARGS:
    python benchmarks/bench_serve.py {{ARGS}}

# The local server under issue 30's mix of every family, with and without 5 % full-game searches, one and two server processes (build the mix first; see the script)
bench-serve-mix *ARGS:
    python benchmarks/bench_serve.py --mix {{ARGS}}

# Where a request's CPU goes without the network: the mix's lookups in one process, the answer alone and the whole application, beside --base (default main)
bench-serve-cpu *ARGS:
    python benchmarks/bench_serve.py --in-process {{ARGS}}

# Issue 31's GPU session on a lent GPU machine: preflight, step1 (benchmark + solve-exact, ~3 min), step2 (the full game's tables, checks, queries; one objective ~5 min), or all (in one call, in order of worth); logs and summaries in $OUT
gpu-session STEP *ARGS:
    python benchmarks/gpu_session.py {{STEP}} {{ARGS}}

# The GPU session here, before any GPU time: every step on tiny boards, CUDA simulator, polars/duckdb/matplotlib refused (a few minutes)
gpu-session-dry *ARGS:
    python benchmarks/gpu_session.py dry --out /tmp/stb-gpu-session-dry {{ARGS}}

# Issue 38's one GPU call on a lent GPU machine: both objectives solved, the values the artefacts need gathered, the labelled positions, the opening book and a summary written to --out (about 4 minutes; docs/knucklebones-full-game.md)
gpu-artefacts *ARGS:
    python benchmarks/gpu_artefacts.py run {{ARGS}}

# That call here, before any GPU time: a 2x2 board with a d3 for the full game, CUDA simulator, polars/duckdb/matplotlib refused, every value against the CPU solver (under a minute)
gpu-artefacts-dry *ARGS:
    python benchmarks/gpu_artefacts.py dry --out /tmp/stb-gpu-artefacts-dry {{ARGS}}

# First paint of the served pages in headless Chromium, beside a static page's (the tests do not time it)
bench-first-paint *ARGS:
    python benchmarks/bench_first_paint.py {{ARGS}}

# The catalog (stb.duckdb): a lookup on a 24-tile box through it against its own file, and what writing it adds to build --variant all (builds the box once: about a minute)
bench-catalog *ARGS:
    python benchmarks/bench_catalog.py {{ARGS}}

# The rule family's search: time and peak memory per variant, the build with and without the strategies stage, the values found
bench-strategies *ARGS:
    python benchmarks/bench_strategy_search.py {{ARGS}}

# One answer behind every face: in-process answers with a roll, a variant's first answer, play's first prompt and bad seat, beside another checkout's (--base DIR, e.g. a worktree of main)
bench-answer *ARGS:
    python benchmarks/bench_answer.py {{ARGS}}

# A Knucklebones answer from the full game's lean tables (files of its layout written here: a few dozen row groups of 1,048,576 ids, its 4,590 in the footer): the cold first answer, the warm one and `knucklebones solve`, beside another checkout (--base DIR, e.g. `git archive main | tar -x -C DIR`)
bench-answer-lean *ARGS:
    python benchmarks/bench_answer.py --lean {{ARGS}}

# A big box's build in stages on one core: the solve alone, its rows made, the rows encoded by the build's writer (the floor), the build (issue 49; --tiles 24 --dice 3 by default: tens of minutes here)
bench-write-floor *ARGS:
    python benchmarks/bench_write_floor.py {{ARGS}}
