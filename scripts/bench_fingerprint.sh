#!/usr/bin/env bash
# Side-by-side fingerprint throughput, one thread, 4-word shingles, in one run:
# neardup (default and blake2b profiles) and the seed-004 reference program (built into the
# example crates/neardup/examples/fingerprint_bench.rs), then the packaged Python peers
# (gaoya's SimHash, the `simhash` package) on the same English documents; prints MB/s,
# docs/s, neardup's ratio to each and whether each target is met, plus non-ASCII figures.
#
# Usage: scripts/bench_fingerprint.sh            (from anywhere; about 1 to 2 minutes)
# Knobs (environment): ENGLISH_BYTES (default 8388608), REPS (5), MIN_SECS (0.25),
#                      SIMHASH_BUDGET (seconds of documents per `simhash` peer, 4)
# Output files: bench-out/fingerprint/{english.jsonl,rust.json,peers.json,report.txt}
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bench-out/fingerprint"
mkdir -p "$OUT"
ENGLISH_BYTES="${ENGLISH_BYTES:-8388608}"
REPS="${REPS:-5}"
MIN_SECS="${MIN_SECS:-0.25}"
SIMHASH_BUDGET="${SIMHASH_BUDGET:-4}"

echo "== fingerprint throughput: $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
echo "machine: nproc=$(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
     "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rustc: $(rustc --version), python: $(python3 --version 2>&1)"
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
echo

# --- Python peers -------------------------------------------------------------------------
if [ ! -x .venv/bin/python ]; then
    echo "creating .venv"
    python3 -m venv .venv
fi
for pkg in simhash gaoya; do
    if .venv/bin/python -c "import $pkg" 2>/dev/null; then
        continue
    fi
    if ! .venv/bin/pip install -q "$pkg" >"$OUT/pip-$pkg.log" 2>&1; then
        echo "PROBLEM: pip install $pkg FAILED (see $OUT/pip-$pkg.log); continuing without it"
        tail -3 "$OUT/pip-$pkg.log" | sed 's/^/    /'
    fi
done
echo "peers: $(.venv/bin/pip list 2>/dev/null | grep -iE '^(simhash|gaoya|numpy) ' | tr -s ' ' | paste -sd, - | sed 's/,/, /g')"

# --- Rust: neardup and the seed-004 reference -----------------------------------------------
echo "building fingerprint_bench (release)"
cargo build --release -q -p neardup --example fingerprint_bench
BIN="$ROOT/target/release/examples/fingerprint_bench"
"$BIN" --english-bytes "$ENGLISH_BYTES" --reps "$REPS" --min-secs "$MIN_SECS" \
    --dump-corpus "$OUT/english.jsonl" --json "$OUT/rust.json" >"$OUT/rust.txt"

# --- Python peers on the same English documents ----------------------------------------------
.venv/bin/python scripts/bench_fingerprint/peers.py --corpus "$OUT/english.jsonl" \
    --out "$OUT/peers.json" --reps "$REPS" --min-secs "$MIN_SECS" \
    --simhash-budget "$SIMHASH_BUDGET"

echo
python3 scripts/bench_fingerprint/report.py "$OUT/rust.json" "$OUT/peers.json" | tee "$OUT/report.txt"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
