#!/usr/bin/env bash
# Throughput and latency of `neardup serve` over loopback with RECORDS records stored.
#
# Corpus (deterministic, cached under bench-out/serve/, nothing downloaded): a word list of
# the 30,000 most frequent words of /usr/share/doc (copyright files and changelogs), then
# RECORDS records of WORDS_PER_RECORD words drawn from it with a skew towards frequent words;
# every tenth record is an edited near duplicate of an earlier one. The store is preloaded
# with `neardup dedup` (inserting a million records over HTTP would measure the same writer
# for an hour), copied before each run, and served with the default rule.
#
# Load: crates/cli/examples/serve_load.rs, one thread, CONNECTIONS keep-alive connections,
# a bounded number of requests each phase (and at most PHASE_SECONDS): queries (half edited
# copies of stored records, half new text), then single-record inserts, then inserts in
# batches of BATCH; these closed-loop phases (each connection sends its next request when
# the last is answered) measure the most the server sustains. Then the targets' rates, open
# loop: queries at QUERY_RATE and single-record inserts at INSERT_RATE per second, sent on
# schedule whatever the answers, latency counted from when each request was due (so a stall
# is charged to every request it delays), with a per-second timeline. Latency is per
# request, to the last byte of the response.
#
# Usage: scripts/bench_serve.sh            (about 6-10 minutes on 2 cores, first run included)
# Knobs: RECORDS (1000000), WORDS_PER_RECORD (80), CONNECTIONS (32), QUERIES (300000),
#        INSERTS (100000), BATCH (16), BATCH_REQUESTS (10000), PHASE_SECONDS (60),
#        QUERY_RATE (15000), INSERT_RATE (5000), RATE_SECONDS (20),
#        SERVE_ARGS (extra `neardup serve` flags, e.g. "--max-distance 6"; default none)
# Output: bench-out/serve/{words.txt,corpus-N.jsonl,store-N.db,report.txt}
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RECORDS="${RECORDS:-1000000}"
WORDS_PER_RECORD="${WORDS_PER_RECORD:-80}"
CONNECTIONS="${CONNECTIONS:-32}"
QUERIES="${QUERIES:-300000}"
INSERTS="${INSERTS:-100000}"
QUERY_RATE="${QUERY_RATE:-15000}"
INSERT_RATE="${INSERT_RATE:-5000}"
RATE_SECONDS="${RATE_SECONDS:-20}"
BATCH="${BATCH:-16}"
BATCH_REQUESTS="${BATCH_REQUESTS:-10000}"
PHASE_SECONDS="${PHASE_SECONDS:-60}"
SERVE_ARGS="${SERVE_ARGS:-}"
OUT="$ROOT/bench-out/serve"
WORDS="$OUT/words.txt"
CORPUS="$OUT/corpus-$RECORDS-$WORDS_PER_RECORD.jsonl"
STORE="$OUT/store-$RECORDS-$WORDS_PER_RECORD.db"
WORK="$OUT/work"
mkdir -p "$OUT"
exec > >(tee "$OUT/report.txt") 2>&1

echo "== neardup serve: $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
echo "machine: nproc=$(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
     "memory: $(free -g | awk '/Mem:/{print $2}') GiB, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
echo "knobs: RECORDS=$RECORDS WORDS_PER_RECORD=$WORDS_PER_RECORD CONNECTIONS=$CONNECTIONS QUERIES=$QUERIES INSERTS=$INSERTS BATCH=$BATCH BATCH_REQUESTS=$BATCH_REQUESTS PHASE_SECONDS=$PHASE_SECONDS QUERY_RATE=$QUERY_RATE INSERT_RATE=$INSERT_RATE RATE_SECONDS=$RATE_SECONDS SERVE_ARGS='$SERVE_ARGS'"

echo "building neardup and the load generator (release)"
cargo build --release -q -p neardup-cli --bin neardup --example serve_load
BIN="$ROOT/target/release/neardup"
LOAD="$ROOT/target/release/examples/serve_load"

if [ ! -s "$WORDS" ]; then
    echo "word list: the 30,000 most frequent words of /usr/share/doc"
    find /usr/share/doc \( -name copyright -o -name 'changelog*.gz' \) -print0 2>/dev/null \
        | xargs -0 zcat -f 2>/dev/null | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' \
        | awk 'length($0) >= 2 && length($0) <= 15' | sort | uniq -c | sort -rn \
        | awk '$1 >= 2 {print $2}' | head -30000 > "$WORDS.tmp" || true
    mv "$WORDS.tmp" "$WORDS"
fi
echo "word list: $(wc -l < "$WORDS") words"

if [ ! -s "$CORPUS" ]; then
    echo "generating $RECORDS records"
    "$LOAD" gen --words "$WORDS" --records "$RECORDS" --words-per-record "$WORDS_PER_RECORD" > "$CORPUS.tmp"
    mv "$CORPUS.tmp" "$CORPUS"
fi
echo "corpus: $CORPUS ($(du -h "$CORPUS" | cut -f1))"

if [ ! -s "$STORE" ]; then
    echo "preloading the store with neardup dedup"
    rm -f "$STORE" "$STORE-wal" "$STORE-shm"
    start=$(date +%s)
    "$BIN" dedup --jsonl "$CORPUS" --store "$STORE.tmp" --out "$OUT/preload" --no-boilerplate -q || [ $? -eq 2 ] # 2: some records rejected
    mv "$STORE.tmp" "$STORE"
    rm -f "$STORE.tmp-wal" "$STORE.tmp-shm"
    echo "preloaded in $(( $(date +%s) - start ))s: $(python3 -c "import json;r=json.load(open('$OUT/preload/report.json'));print(r['store']['records'],'records,',r['decisions'])" 2>/dev/null || true)"
fi

rm -rf "$WORK" && mkdir -p "$WORK"
cp "$STORE" "$WORK/store.db"
# Written to disk now: otherwise the server's first checkpoint fsync would wait for the
# whole fresh copy (hundreds of ms), a stall no real deployment has.
sync "$WORK/store.db"
echo "store: $(du -h "$WORK/store.db" | cut -f1)"

SERVER_PID=""
cleanup() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; }
trap cleanup EXIT

# shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
"$BIN" serve --store "$WORK/store.db" --listen 127.0.0.1:0 $SERVE_ARGS 2> "$WORK/server.log" &
SERVER_PID=$!
ADDR=""
for _ in $(seq 1 600); do
    ADDR=$(grep -o 'listening on http://[0-9.:]*' "$WORK/server.log" | sed 's|listening on http://||' || true)
    [ -n "$ADDR" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
    sleep 0.5
done
[ -n "$ADDR" ] || { echo "the server did not start"; cat "$WORK/server.log"; exit 1; }
grep 'listening' "$WORK/server.log"
echo "server RSS after open: $(ps -o rss= -p "$SERVER_PID" | awk '{printf "%.0f MiB", $1/1024}')"

load() {
    "$LOAD" load --words "$WORDS" --addr "$ADDR" --stored "$RECORDS" \
        --words-per-record "$WORDS_PER_RECORD" --max-seconds "$PHASE_SECONDS" "$@"
}

# The server's own view of a phase: its request-duration histogram (handler entry to
# response) before and after, as percentiles interpolated within buckets like Prometheus's
# histogram_quantile. The load generator shares the two cores, so a latency the client sees
# and the server does not is time the request spent waiting for a CPU on either side.
scrape() { curl -s "http://$ADDR/metrics" > "$WORK/metrics-$1.txt" || true; }
phase() { # ROUTE NAME load-args...
    local route=$1 name=$2
    shift 2
    scrape "$name-before"
    load "$@"
    scrape "$name-after"
    python3 - "$route" "$WORK/metrics-$name-before.txt" "$WORK/metrics-$name-after.txt" <<'PY' || true
import re, sys
route, before, after = sys.argv[1:]
pattern = re.compile(r'neardup_request_duration_seconds_bucket\{route="%s",le="([^"]+)"\} (\d+)' % route)
def buckets(path):
    return {m.group(1): int(m.group(2)) for m in map(pattern.match, open(path)) if m}
a, b = buckets(before), buckets(after)
les = sorted((float("inf") if k == "+Inf" else float(k), n - a.get(k, 0)) for k, n in b.items())
total = les[-1][1] if les else 0
def quantile(p):
    rank, lo, below = p * total, 0.0, 0
    for le, n in les:
        if n >= rank:
            return lo if le == float("inf") else lo + (le - lo) * (rank - below) / max(n - below, 1)
        lo, below = le, n
    return lo
if total:
    print(f"  server side: {total} {route} requests, p50_ms={quantile(0.5) * 1e3:.2f} "
          f"p99_ms={quantile(0.99) * 1e3:.2f}")
PY
}

echo "-- warm-up (2,000 queries)"
load --mode query --requests 2000 --connections "$CONNECTIONS" --label "warmup "
echo "-- queries: POST /v1/query, one record per request"
phase query query --mode query --requests "$QUERIES" --connections "$CONNECTIONS" --label "query "
echo "-- inserts: POST /v1/records, one record per request (each acknowledged after a durable group commit)"
phase insert insert --mode insert --requests "$INSERTS" --connections "$CONNECTIONS" --run "single" --label "insert "
echo "-- inserts: POST /v1/records, $BATCH records per request"
phase insert batch --mode insert --requests "$BATCH_REQUESTS" --batch "$BATCH" --connections "$CONNECTIONS" --run "batch" --label "insert-batch "
echo "-- queries at $QUERY_RATE/s for ${RATE_SECONDS}s, open loop"
phase query query-rate --mode query --requests $((QUERY_RATE * RATE_SECONDS)) --rate "$QUERY_RATE" --connections "$CONNECTIONS" --timeline --label "query-at-rate "
echo "-- single-record inserts at $INSERT_RATE/s for ${RATE_SECONDS}s, open loop"
phase insert insert-rate --mode insert --requests $((INSERT_RATE * RATE_SECONDS)) --rate "$INSERT_RATE" --connections "$CONNECTIONS" --run "rate" --timeline --label "insert-at-rate "

echo "-- server metrics"
curl -s "http://$ADDR/metrics" | grep -E '^neardup_(decisions_total|store_records|largest_group_size|index_largest_bucket|index_fingerprints|commits_total|committed_records_total|store_bytes)' || true
echo "server RSS at the end: $(ps -o rss= -p "$SERVER_PID" | awk '{printf "%.0f MiB", $1/1024}')"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=""
tail -n 2 "$WORK/server.log"
