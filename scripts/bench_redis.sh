#!/usr/bin/env bash
# Inserts/s and queries/s of neardup with 1, 2 and 4 workers over a store already holding
# STORED records (default 1M): the embedded SQLite store, one Redis server, and a 3-master
# Redis Cluster, all on loopback; for Redis, the commands per record (INFO commandstats
# summed over the nodes) and the client's round trips per record and per query.
#
# Workers are threads of one driver (scripts/bench_redis/bench_redis.rs, the `bench_redis`
# example), each with its own connection and in-memory replica of the index, exactly what
# separate `neardup` processes have. Documents: 120 words, every fifth a near duplicate of
# the one before. The servers run without persistence (throughput of the protocol, not of
# fsync); the tests cover AOF with appendfsync always.
#
# Usage: scripts/bench_redis.sh            (STORED=1000000 INSERT=40000 QUERIES=20000)
#        STORED=100000 scripts/bench_redis.sh   (a quicker look)
#        BACKENDS=redis,cluster scripts/bench_redis.sh   (some of sqlite, redis, cluster)
#        BASELINE=<git rev> scripts/bench_redis.sh   (each backend run with the driver built
#            at that revision too, alternating, for a before/after in one run)
# The driver is built under CARGO_TARGET_DIR when set (else target/).
# Output: bench-out/redis/report.txt
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STORED="${STORED:-1000000}"
INSERT="${INSERT:-40000}"
QUERIES="${QUERIES:-20000}"
WORKERS="${WORKERS:-1,2,4}"
BACKENDS="${BACKENDS:-sqlite,redis,cluster}"
OUT="$ROOT/bench-out/redis"
REPORT="$OUT/report.txt"
command -v redis-server >/dev/null || { echo "redis-server missing: apt-get install redis-server" >&2; exit 1; }
rm -rf "$OUT/run"
mkdir -p "$OUT/run"

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start_server() { # port dir [extra args]
    local port=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
        --logfile "$dir/redis.log" "$@" &
    PIDS+=($!)
    for _ in $(seq 100); do
        redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.1
    done
    echo "redis-server on $port did not start" >&2
    exit 1
}

BASE="${BASE_PORT:-17300}"
start_server "$BASE" "$OUT/run/single"
for i in 1 2 3; do
    start_server $((BASE + i)) "$OUT/run/c$i" --cluster-enabled yes \
        --cluster-config-file "$OUT/run/c$i/nodes.conf" --cluster-node-timeout 5000
done
redis-cli --cluster create 127.0.0.1:$((BASE + 1)) 127.0.0.1:$((BASE + 2)) 127.0.0.1:$((BASE + 3)) \
    --cluster-replicas 0 --cluster-yes >"$OUT/run/cluster-create.log"
until redis-cli -p $((BASE + 1)) cluster info | grep -q cluster_state:ok; do sleep 0.2; done

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BINS=()
if [ -n "${BASELINE:-}" ]; then
    echo "building the baseline driver at $BASELINE (release)"
    rm -rf "$OUT/run/baseline"
    git worktree prune # one an interrupted run left registered
    git worktree add -q --detach "$OUT/run/baseline" "$BASELINE"
    # A target directory of its own: built into this tree's, the two drivers share an
    # output path, and cargo may leave the other's binary there.
    (cd "$OUT/run/baseline" && CARGO_TARGET_DIR="$TARGET/bench-redis-baseline" cargo build --release -q -p neardup --features redis --example bench_redis)
    cp "$TARGET/bench-redis-baseline/release/examples/bench_redis" "$OUT/run/bench_redis.baseline"
    git worktree remove --force "$OUT/run/baseline"
    BINS+=("$OUT/run/bench_redis.baseline")
fi
echo "building the driver (release)"
cargo build --release -q -p neardup --features redis --example bench_redis
BINS+=("$TARGET/release/examples/bench_redis")

{
    echo "== neardup on Redis: $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
    echo "machine: nproc=$(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
         "memory: $(free -g | awk '/Mem:/{print $2}') GiB; $(redis-server --version | cut -d' ' -f1-3)"
    echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
    echo "stored=$STORED, each run inserts $INSERT new records and runs $QUERIES queries, workers=$WORKERS, batch=1000"
} | tee "$REPORT"

reset() { # store nodes: each driver starts from an empty store and fills it to STORED
    if [ -z "$2" ]; then
        rm -f "$1" "$1-wal" "$1-shm"
    else
        for node in ${2//,/ }; do redis-cli -h "${node%:*}" -p "${node#*:}" flushall >/dev/null; done
    fi
}
run() { # title store nodes
    for bin in "${BINS[@]}"; do
        reset "$2" "$3"
        local which="this tree"
        [[ "$bin" == *.baseline ]] && which="baseline $BASELINE"
        echo "-- $1 ($2), $which" | tee -a "$REPORT"
        "$bin" --store "$2" --nodes "$3" --stored "$STORED" --insert "$INSERT" --queries "$QUERIES" \
            --workers "$WORKERS" 2>&1 | tee -a "$REPORT"
        echo | tee -a "$REPORT"
    done
}
wants() { [[ ",$BACKENDS," == *",$1,"* ]]; }
if wants sqlite; then run "embedded SQLite" "$OUT/run/bench.db" ""; fi
if wants redis; then
    run "one Redis server" "redis://127.0.0.1:$BASE/0?prefix=bench" "127.0.0.1:$BASE"
fi
if wants cluster; then
    run "3-master Redis Cluster" \
        "redis+cluster://127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2)),127.0.0.1:$((BASE + 3))/?prefix=bench" \
        "127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2)),127.0.0.1:$((BASE + 3))"
fi
for p in $BASE $((BASE + 1)) $((BASE + 2)) $((BASE + 3)); do
    echo "redis :$p used_memory_human=$(redis-cli -p $p info memory | grep -m1 used_memory_human | cut -d: -f2 | tr -d '\r')" | tee -a "$REPORT"
done
echo "report: $REPORT"
