#!/usr/bin/env bash
# Code mode's default rule (issue 39): every code_eval corpus scored at shingle widths 3-5 with
# its pairs dumped, then scripts/code_rule.py chooses the rule: recall >= 0.95 at precision
# >= 0.99 on the rewrites of all seven languages, and of those the best precision on pip's
# vendored libraries against their originals. Runs code_java_go.sh (installs the JDK's and
# Go's sources as root), code_npm.sh (npm registry, first run) and code_vendored.sh (PyPI,
# first run).
#
# Usage: scripts/code_rule.sh   (DUMP=target/code-rule.jsonl; about 5 minutes on 2 cores)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DUMP="${DUMP:-$ROOT/target/code-rule.jsonl}"
WIDTHS="${WIDTHS:-3,4,5}"
rm -f "$DUMP"
cargo run -q --release -p neardup --example code_eval -- \
    --corpora rust,python,c --widths "$WIDTHS" --jaccard 0.7 --dump "$DUMP"
scripts/code_npm.sh --widths "$WIDTHS" --dump "$DUMP"
scripts/code_java_go.sh --widths "$WIDTHS" --dump "$DUMP"
scripts/code_vendored.sh --widths "$WIDTHS" --dump "$DUMP"
python3 scripts/code_rule.py "$DUMP" --current 4,16,0.7
