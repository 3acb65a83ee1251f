#!/usr/bin/env bash
# Index benchmarks: Rust layouts vs the seed-004 reference, and vs Python's `simhash`.
#
#   scripts/bench_index.sh                 # Python comparison at N=100000, k=3
#   N=1000000 scripts/bench_index.sh       # larger (the Python build takes minutes)
#   FULL=1 scripts/bench_index.sh          # also the 100M, join and radius runs (~24 GiB RAM)
#   REAL=1 scripts/bench_index.sh          # also real fingerprints: k 3 and radius runs
#
# Real fingerprints are those of every distinct paragraph (8 words or more) of the dedup
# bench corpus (the text of /usr/share/doc and every man page, with the bench's edited and
# spliced variants; scripts/bench_dedup.sh builds it, or this script does when it is
# missing): about 826k, clustered as real text is (the same paragraph edited across versions
# and pages), fingerprinted by `neardup fingerprint --lines` with the default profile.
#
# Creates .venv (gitignored) with `pip install simhash`; writes under bench-out/.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
K=${K:-3}
PY_QUERIES=${PY_QUERIES:-20000}
OUT=bench-out
mkdir -p "$OUT"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet simhash

cargo build --release --quiet -p neardup --example index_bench
BIN=target/release/examples/index_bench

"$BIN" dump --n "$N" --out "$OUT/fps.txt"
echo "== Rust, n=$N, k=$K (one thread)"
"$BIN" k3 --fps "$OUT/fps.txt" --k "$K" --queries 1000000 | tee "$OUT/rust_k3.txt"
echo "== Python simhash.SimhashIndex, n=$N, k=$K"
.venv/bin/python scripts/bench_index/simhash_index.py "$OUT/fps.txt" "$K" "$PY_QUERIES" | tee "$OUT/python.txt"

python3 - "$OUT/rust_k3.txt" "$OUT/python.txt" <<'PY'
import re, sys
rust = open(sys.argv[1]).read()
py = float(re.search(r"qps=(\d+)", open(sys.argv[2]).read()).group(1))
print("== ratios to Python simhash (queries/s, one thread)")
for line in rust.splitlines():
    m = re.match(r"^(\S.*?)\s{2,}(\d+) q/s", line)
    if m:
        print(f"{m.group(1):<36} {int(m.group(2)):>10} q/s  {int(m.group(2)) / py:>8.1f}x")
print(f"{'python simhash':<36} {py:>10.0f} q/s  {1:>8.1f}x")
PY

if [ "${FULL:-0}" = 1 ]; then
    echo "== 1M random, k=3"
    "$BIN" k3 --n 1000000 --queries 2000000
    echo "== 100M random, k=3 (needs ~20 GiB)"
    "$BIN" large --n "${LARGE_N:-100000000}"
    echo "== join 10M, k=3, planted pairs"
    "$BIN" join --n 10000000 --k 3 --planted 100000
    echo "== radius 7/10/12/16 at 1M and join 1M k=10"
    "$BIN" radius --n 1000000
fi

if [ "${REAL:-0}" = 1 ]; then
    CORPUS=bench-out/dedup/corpus-1gb.jsonl
    if [ ! -s "$CORPUS" ]; then
        cargo build --release --quiet -p neardup --example quality_eval
        mkdir -p bench-out/dedup
        target/release/examples/quality_eval big-corpus --out "$CORPUS.tmp" --gb 1 \
            --sample-out "$CORPUS.sample.tmp" --sample-every 100
        mv "$CORPUS.tmp" "$CORPUS"
        rm -f "$CORPUS.sample.tmp"
    fi
    cargo build --release --quiet -p neardup-cli
    python3 - "$CORPUS" "$OUT/real-paragraphs.txt" <<'PY'
import hashlib, json, sys
seen, n = set(), 0
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        for p in json.loads(line)["body_text"].split("\n\n"):
            p = " ".join(p.split())
            if len(p.split()) < 8:
                continue
            h = hashlib.blake2b(p.encode(), digest_size=8).digest()
            if h not in seen:
                seen.add(h)
                out.write(p + "\n")
                n += 1
print(f"{n} distinct paragraphs")
PY
    target/release/neardup fingerprint --lines "$OUT/real-paragraphs.txt" 2>/dev/null \
        | cut -f2 > "$OUT/real-fps.txt" || true
    echo "== real fingerprints ($(wc -l < "$OUT/real-fps.txt")), k=3"
    "$BIN" k3 --fps "$OUT/real-fps.txt" --queries 200000
    echo "== real fingerprints, radius 7/10/12/16 and join k=10"
    "$BIN" radius --fps "$OUT/real-fps.txt"
fi
