#!/usr/bin/env bash
# The Python package against its Python peers (gaoya, rensa, datasketch, simhash) and the
# Rust core, side by side in one run: fingerprints per core, and dedup against datasketch
# MinHashLSH. Installs the package and the peers into .venv.
#
# Usage: scripts/bench_python.sh   (a few minutes; the dedup part reads the dedup bench's
#        corpus, bench-out/dedup/corpus-1gb.jsonl, when `GB=1 scripts/bench_dedup.sh` made it)
# Knobs: ENGLISH_BYTES (8388608), DEDUP_MB (8), BUDGET (seconds per slow peer, 3)
# Output: bench-out/python/{english.jsonl,rust.json,bench.json,report.txt}
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bench-out/python"
mkdir -p "$OUT"
echo "== python package: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), tree $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg) =="
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q numpy pyarrow gaoya rensa datasketch simhash
CARGO_TARGET_DIR="$ROOT/target/python" .venv/bin/pip install -q --force-reinstall --no-deps ./crates/python
cargo build --release -q -p neardup --example fingerprint_bench
target/release/examples/fingerprint_bench --english-bytes "${ENGLISH_BYTES:-8388608}" --reps 3 \
    --dump-corpus "$OUT/english.jsonl" --json "$OUT/rust.json" > "$OUT/rust.txt"
.venv/bin/python scripts/bench_python/bench.py --corpus "$OUT/english.jsonl" --rust "$OUT/rust.json" \
    --dedup-corpus bench-out/dedup/corpus-1gb.jsonl --dedup-mb "${DEDUP_MB:-8}" \
    --budget "${BUDGET:-3}" --out "$OUT/bench.json" | tee "$OUT/report.txt"
