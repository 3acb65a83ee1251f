#!/usr/bin/env bash
# Checks `neardup serve` against its own OpenAPI document with schemathesis, a
# property-based API tester: twice, once started without a token and once with
# --token-file, every check (`--checks all`): no 5xx, every status and response body as
# documented, schema-valid requests accepted, schema-violating ones refused, 401 without the
# token, 405 with `Allow` for undocumented methods, erased records gone.
#
# Each server gets a fresh store in a temp dir and a free loopback port (port 0; the
# address is read from its log); nothing but loopback is contacted once schemathesis is
# installed (into a venv, from PyPI, on the first run). The servers are stopped on exit.
#
# Usage: scripts/schemathesis.sh                 (2-4 minutes on 2 cores, first run excluded)
# Knobs: MAX_EXAMPLES (per operation and phase, 200), SEED (schemathesis --seed; default
#        random, the seed is printed for `st run --seed`), ST_VERSION (4.32.5),
#        ST_VENV (target/schemathesis-venv), RUN_TIMEOUT (seconds per run, 600)
# Exit status: 0 when both runs pass, non-zero when a check fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ST_VERSION="${ST_VERSION:-4.32.5}"
ST_VENV="${ST_VENV:-$ROOT/target/schemathesis-venv}"
MAX_EXAMPLES="${MAX_EXAMPLES:-200}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
SEED="${SEED:-}"

if ! "$ST_VENV/bin/st" --version 2>/dev/null | grep -qF "$ST_VERSION"; then
    echo "schemathesis.sh: installing schemathesis $ST_VERSION into $ST_VENV"
    rm -rf "$ST_VENV"
    if python3 -m venv "$ST_VENV" 2>/dev/null; then
        "$ST_VENV/bin/python" -m pip install -q --disable-pip-version-check "schemathesis==$ST_VERSION"
    else
        # Debian without python3-venv has no ensurepip: a venv without pip, filled by the
        # system's pip (22.3 or later).
        rm -rf "$ST_VENV"
        python3 -m venv --without-pip "$ST_VENV"
        python3 -m pip --python "$ST_VENV/bin/python" install -q --disable-pip-version-check \
            "schemathesis==$ST_VERSION" ||
            { echo "schemathesis.sh: cannot install schemathesis: apt-get install python3-venv" >&2; exit 1; }
    fi
fi

cargo build -q -p neardup-cli --bin neardup
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET_DIR/debug/neardup"

WORK="$(mktemp -d)"
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Schemathesis's own settings: for the two operations that read records, one status more
# for each of two checks (their default lists plus one), each stated in the document.
# - positive_data_acceptance expects 2xx for every schema-valid request, but a record whose
#   text has no words (punctuation only, or HTML with no visible text) is refused with 422:
#   "has a word" cannot be put in JSON Schema, as words are counted after Unicode
#   normalisation, tokenisation and HTML extraction. The record schema's description says
#   so and 422 is declared; every other refusal (no id, blank id, no text field, blank text)
#   is in the schema and stays checked.
# - negative_data_rejection does not count 413 as a refusal, but a batch over --max-batch
#   (the document's `maxItems`) gets 413, as a body over --max-body-bytes does: the request
#   is too large, and the client should split it.
cat >"$WORK/schemathesis.toml" <<'EOF'
[[operations]]
include-path-regex = "^/v1/(records|query)$"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
checks.negative_data_rejection.expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
EOF

# Starts `neardup serve` with a fresh store and the given flags; sets BASE.
start_server() {
    local name="$1"
    shift
    : >"$WORK/$name.log"
    "$BIN" serve --store "$WORK/$name.db" --listen 127.0.0.1:0 "$@" 2>>"$WORK/$name.log" &
    SERVER_PID=$!
    BASE=""
    for _ in $(seq 1 600); do
        BASE="$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$WORK/$name.log" | head -n 1)"
        if [ -n "$BASE" ] && python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=2)' "$BASE" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "schemathesis.sh: the server did not start:" >&2
            cat "$WORK/$name.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "schemathesis.sh: no answer from /healthz after 60s:" >&2
    cat "$WORK/$name.log" >&2
    exit 1
}

# Runs schemathesis against the server at BASE; extra arguments go to `st run`.
run_schemathesis() {
    local name="$1"
    shift
    local seed=()
    if [ -n "$SEED" ]; then
        seed=(--seed "$SEED")
    fi
    echo "=== schemathesis: $name ($BASE)"
    # From the temp dir, so that nothing (hypothesis' example database, reports) is
    # written into the working tree.
    (
        cd "$WORK"
        timeout "$RUN_TIMEOUT" "$ST_VENV/bin/st" --config-file "$WORK/schemathesis.toml" run \
            "$BASE/v1/openapi.json" \
            --checks all \
            --max-examples "$MAX_EXAMPLES" \
            --generation-database none \
            --no-color \
            "${seed[@]}" \
            "$@"
    )
}

status=0
start_server open
run_schemathesis "without a token" || { status=1; echo "--- the server's log:"; tail -n 30 "$WORK/open.log"; }
stop_server

TOKEN="st-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
printf '%s\n' "$TOKEN" >"$WORK/token"
start_server token --token-file "$WORK/token"
run_schemathesis "with --token-file" --header "Authorization: Bearer $TOKEN" ||
    { status=1; echo "--- the server's log:"; tail -n 30 "$WORK/token.log"; }
stop_server

if [ "$status" -ne 0 ]; then
    echo "schemathesis.sh: FAILED (see the failures above)" >&2
else
    echo "schemathesis.sh: both runs passed"
fi
exit "$status"
