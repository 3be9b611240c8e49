#!/usr/bin/env bash
# Smoke test of a normal install: build the wheel, install it (not -e) into a fresh virtual
# environment, and run every command from a directory outside the source tree, so that a file
# the program reads at run time but the wheel lacks (queries, contracts) fails here.
#
# Usage: .ci/smoke_wheel.sh           (PYTHON=python3.11 to pick the interpreter;
#                                      SMOKE_KEEP=1 keeps the temporary directory)
# Exit code: 0 when every command did what it should, 1 at the first one that did not.
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/stb-smoke.XXXXXX")"
if [[ -z "${SMOKE_KEEP:-}" ]]; then
    trap 'rm -rf "$WORK"' EXIT
fi
DATA="$WORK/data"
LOG="$WORK/last.log"

fail() { echo "smoke: FAIL: $*" >&2; [[ -f "$LOG" ]] && sed 's/^/    /' "$LOG" >&2; exit 1; }

# run CMD...: must exit 0; its output is kept in $LOG for the checks that follow.
run() {
    echo "smoke: $*"
    "$@" >"$LOG" 2>&1 || fail "exit $? from: $*"
}

# expect_code CODE CMD...: must exit CODE with one `error:` line on stderr.
expect_code() {
    local want="$1"; shift
    echo "smoke: (expect exit $want) $*"
    local code=0
    "$@" >"$WORK/out.log" 2>"$LOG" || code=$?
    [[ "$code" == "$want" ]] || fail "exit $code (wanted $want) from: $*"
    [[ "$(wc -l <"$LOG")" -eq 1 ]] && grep -q '^error: ' "$LOG" \
        || fail "not one error line from: $*"
}

# has TEXT: the last command's output contains TEXT.
has() { grep -q -- "$1" "$LOG" || fail "output lacks '$1'"; }

echo "smoke: building the wheel from $SRC"
"$PYTHON" -m pip wheel --quiet --no-deps -w "$WORK/dist" "$SRC" >/dev/null
WHEEL="$(ls "$WORK"/dist/stb_pipeline-*.whl)"
"$PYTHON" - "$WHEEL" <<'EOF' || fail "the wheel lacks the query library"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for want in ("pipeline/queries/best_opening_roll.sql", "pipeline/queries/strategy_mistakes.sql",
             "pipeline/queries/contracts/bellman.sql"):
    assert want in names, want
EOF

echo "smoke: installing $(basename "$WHEEL") into a fresh virtual environment"
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet "$WHEEL"
export PATH="$WORK/venv/bin:$PATH"
unset PYTHONPATH STB_DATA_DIR
cd "$WORK"  # outside the source tree: nothing may come from $SRC now

run python -c "import pipeline, sys; sys.exit(pipeline.__file__.startswith('$SRC'))"
run stb-pipeline --help
run stb-pipeline variants
has classic
run stb-pipeline build --variant classic,six-tiles-one-die,two-player --data-dir "$DATA"
run stb-pipeline enumerate --variant lever --data-dir "$WORK/stages"
run stb-pipeline edges --variant lever --data-dir "$WORK/stages"
run stb-pipeline solve --variant lever --data-dir "$WORK/stages"
run stb-pipeline policy --variant lever --data-dir "$WORK/stages"
run stb-pipeline expect --variant classic 123456789 --data-dir "$DATA"
has 0.0714316223
run stb-pipeline move --variant classic 12345 7 --data-dir "$DATA"
has "best move \[3, 4\]"
run stb-pipeline query --list
has best_opening_roll
run stb-pipeline query best_opening_roll --variant classic --data-dir "$DATA"
has "0.101501853606"
run stb-pipeline query top_states --variant classic -p top=3 --format csv --data-dir "$DATA"
has "^1,124,"
run stb-pipeline query best_opening_roll -o "$WORK/opening.csv" --data-dir "$DATA"
expect_code 2 stb-pipeline query best_opening_roll -o "$WORK/opening.csv" --data-dir "$DATA"
expect_code 2 stb-pipeline query ../queries/best_opening_roll --data-dir "$DATA"
run stb-pipeline verify --data-dir "$DATA"
grep -Eq "[1-9][0-9,]* rows checked" "$LOG" || fail "verify checked no rows"
has "contracts hold"
run stb-pipeline verify --variant classic --data-dir "$DATA"
run stb-pipeline export verifier --variant two-player -o "$WORK/two.verifier" --data-dir "$DATA"
run stb-pipeline check-verifier "$WORK/two.verifier" --data-dir "$DATA"
run stb-pipeline report --out "$WORK/report" --data-dir "$DATA"
[[ -s "$WORK/report/index.html" ]] || fail "report wrote no index.html"
run sh -c "printf '1\n1\n1\n1\n1\n1\n1\n1\n' | stb-pipeline play --variant classic --seed 7 --data-dir '$DATA'"
run stb-pipeline benchmark --variant classic --games 2000 --strategy greedy,random --data-dir "$DATA"
run stb-pipeline knucklebones solve 44/1/_ 2/_/_ 4 --depth 2
has "best column"
run stb-pipeline knucklebones tree 44/1/_ 2/_/_ 4 --depth 1
run sh -c "printf '1\n2\n3\n1\n2\n3\n1\n2\n3\n' | stb-pipeline knucklebones play --seed 3 --depth 1"
run stb-pipeline knucklebones benchmark --games 2 --depths 1 --opponents random --data-dir "$DATA"
# the packaged Knucklebones book and evaluator (models/*.npz in the wheel) answer without tables
run stb-pipeline knucklebones solve ___/___/___ 2__/___/___ 3 -v knucklebones-3x3-d4 -d "$WORK/none"
has "exact: yes (book)"
run stb-pipeline knucklebones solve 13_/2__/4__ 2__/33_/1__ 2 -v knucklebones-3x3-d4 -d "$WORK/none"
has "estimate (net-d4"
run stb-pipeline knucklebones check-artefacts --no-exact  # the exact solves: the test suite's
has "3x3-d4-book.npz"
run stb-pipeline verify --data-dir "$DATA"
run env STB_DATA_DIR="$DATA" ShutTheBox --one --expect 123456789
has 0.502810
run ShutTheBox --two --move 13456789 17 12
has "\[3, 9\]"
run python -m pipeline --help
run python -c "import pipeline; print(pipeline.query('best_opening_roll', variant='classic', data_dir='$DATA').height)"
has 11
# The N-player family, the offline explorer, the GPU refusal and the local server.
run stb-pipeline build --variant four-player --data-dir "$DATA"
run stb-pipeline move --variant four-player 134 7 --player 3 --best-score 11 --best-count 1 --data-dir "$DATA"
has "best move \[3, 4\]"
# One door: the catalog from the duckdb command, a dataset export and its check.
run duckdb -readonly -csv "$DATA/stb.duckdb" -c "select count(*) > 0 as ok from policy where variant = 'four-player'"
has true
run stb-pipeline export dataset -o "$WORK/dataset" --data-dir "$DATA"
run stb-pipeline verify --data-dir "$WORK/dataset"
run stb-pipeline explore --data-dir "$DATA" -o "$WORK/explorer.html"
[[ -s "$WORK/explorer.html" ]] || fail "explore wrote no page"
expect_code 2 stb-pipeline knucklebones solve-exact --columns 2 --rows 2 --device cuda
expect_code 2 stb-pipeline serve --data-dir "$DATA"
echo "smoke: installing the serve extra"
"$WORK/venv/bin/python" -m pip install --quiet "$WHEEL[serve]"
stb-pipeline serve --data-dir "$DATA" --port 8765 >"$WORK/serve.log" 2>&1 &
SERVER=$!
run python - <<'PY'
import json, time, urllib.request
url = "http://127.0.0.1:8765/four-player/position.json?tiles=134&player=3&best_score=11&best_count=1&roll=7"
for _ in range(100):
    try:
        answer = json.load(urllib.request.urlopen(url, timeout=5))
        break
    except OSError:
        time.sleep(0.2)
else:
    raise SystemExit("the server never answered")
assert answer["moves"][0]["move"] == [3, 4], answer
print("served", answer["moves"][0])
PY
kill -INT "$SERVER"; wait "$SERVER" || fail "serve did not stop cleanly on Ctrl-C: $(cat "$WORK/serve.log")"
echo "smoke: every command works from the installed wheel"
