#!/usr/bin/env bash
# The Spark job (neardup.spark) on a local master against the CLI and datasketch MinHashLSH
# on one real corpus, side by side in one run, and the per-stage costs behind docs/scale.md
# (candidates, shuffle bytes and memory per record at k = 3, 10, 14, 16 and 128-bit k = 28,
# verified in the groups or by a join).
# Installs pyspark, pandas, datasketch and the package into .venv; needs Java 17.
#
# Usage: scripts/bench_spark.sh   (about 12 minutes on 2 cores)
# Knobs: RECORDS (real records before the recrawl copies, 40000; the machine's man pages,
#        /usr/share/doc and fortunes bound it), CORES (local[N], the machine's), BUDGET
#        (seconds for datasketch, 60), SETTINGS (bits:k[:verify], verify auto unless named; "64:3,64:3:join,64:10,64:10:join,64:10:tiles,64:14,64:14:groups,64:16,64:16:groups,128:28,128:28:groups,128:28:join")
# Output: bench-out/spark/{bench.json,report.txt}
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bench-out/spark"
mkdir -p "$OUT"
command -v java >/dev/null || { echo "java is missing: pyspark needs Java 17 (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
echo "== spark job: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), tree $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg) =="
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q numpy pyarrow "pandas==2.2.3" "pyspark==4.0.1" datasketch
CARGO_TARGET_DIR="$ROOT/target/python" .venv/bin/pip install -q --force-reinstall --no-deps ./crates/python
cargo build --release -q -p neardup-cli
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
.venv/bin/python scripts/bench_spark/bench.py --neardup "$TARGET/release/neardup" \
    --records "${RECORDS:-40000}" --cores "${CORES:-$(nproc)}" --budget "${BUDGET:-60}" \
    --settings "${SETTINGS:-64:3,64:3:join,64:10,64:10:join,64:10:tiles,64:14,64:14:groups,64:16,64:16:groups,128:28,128:28:groups,128:28:join}" --out "$OUT" | tee "$OUT/report.txt"
