#!/usr/bin/env bash
# End-to-end throughput of `neardup dedup --html-field` on raw HTML pages: a "crawl" made of
# the HTML documentation of every installed Rust toolchain (each toolchain one host, the same
# page under the same path in each: recrawled pages, many near and some exact copies), or of
# /usr/share/doc's HTML pages where no toolchain ships its docs. MB/s counts input bytes (the
# JSONL read); report.json's throughput counts the text extracted from it.
#
#   PAGES=15000 RUNS=3 scripts/bench_html.sh
#
# Output: bench-out/html/{crawl.jsonl,run-N/}
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${PAGES:-15000}
RUNS=${RUNS:-3}
OUT=bench-out/html
mkdir -p "$OUT"
cargo build --release -q -p neardup-cli
BIN=target/release/neardup

python3 - "$OUT/crawl.jsonl" "$PAGES" <<'EOF'
import glob, json, os, random, sys
out, pages = sys.argv[1], int(sys.argv[2])
roots = sorted(glob.glob(os.path.expanduser("~/.rustup/toolchains/*/share/doc/rust/html")))
if len(roots) < 1:
    roots = ["/usr/share/doc"]
paths = None
for root in roots:
    found = set()
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith((".html", ".htm")):
                found.add(os.path.relpath(os.path.join(d, f), root))
    paths = found if paths is None else paths & found
paths = sorted(paths)
random.Random(11).shuffle(paths)
paths = paths[:pages]
n = size = 0
with open(out, "w") as o:
    for i, root in enumerate(roots):
        host = "crawl%d.example" % i
        for rel in paths:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                page = f.read()
            o.write(json.dumps({"id": "%d/%s" % (i, rel), "url": "https://%s/%s" % (host, rel),
                                "first_seen": "2026-%02d-01T00:00:00Z" % (i + 1), "html": page}) + "\n")
            n += 1
            size += len(page)
print("corpus: %d pages of %d roots (%s), %.1f MB of HTML" % (n, len(roots), ", ".join(roots), size / 1e6))
EOF

bytes=$(stat -c %s "$OUT/crawl.jsonl")
echo "== dedup --html-field html: $(date -u '+%F %T UTC'), $(nproc) cores, $(awk "BEGIN{printf \"%.1f\", $bytes/1e6}") MB of JSONL =="
for i in $(seq "$RUNS"); do
  rm -rf "$OUT/run-$i" "$OUT/run-$i.db"*
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time-$i" "$BIN" dedup --jsonl "$OUT/crawl.jsonl" \
    --html-field html --out "$OUT/run-$i" --store "$OUT/run-$i.db" --quiet || [ $? -eq 2 ] # 2: some records rejected
  read -r wall user sys rss < "$OUT/time-$i"
  text=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['throughput_mb_per_s'])" "$OUT/run-$i/report.json")
  awk -v b="$bytes" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v t="$text" -v i="$i" \
    'BEGIN{printf "run %d: %.2f s, %.1f MB/s of input (%.1f of text), %.1f CPU-s, RSS %d MB\n", i, w, b/1e6/w, t, u+s, r/1024}'
done
