#!/usr/bin/env bash
# Code mode against word mode on Java and Go (code_eval's rewrite measurement, issue 39):
# the JDK's own library sources (Debian's openjdk-17-source: src.zip, unpacked) and Go's
# standard library (golang-1.19-src). Installs the two packages when run as root and they
# are missing.
#
# Usage: scripts/code_java_go.sh [code_eval args]   (WORK=target/java-go; FILES=300)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${WORK:-$ROOT/target/java-go}"
SRC_ZIP="$(ls /usr/lib/jvm/java-17-openjdk-*/lib/src.zip 2>/dev/null | head -1 || true)"
GO_SRC="$(ls -d /usr/share/go-1.*/src 2>/dev/null | head -1 || true)"
if { [ -z "$SRC_ZIP" ] || [ -z "$GO_SRC" ]; } && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-source golang-1.19-src >/dev/null
    SRC_ZIP="$(ls /usr/lib/jvm/java-17-openjdk-*/lib/src.zip | head -1)"
    GO_SRC="$(ls -d /usr/share/go-1.*/src | head -1)"
fi
[ -n "$SRC_ZIP" ] && [ -n "$GO_SRC" ] || {
    echo "needs openjdk-17-source and golang-1.19-src (apt-get install them as root)" >&2
    exit 1
}
if [ ! -d "$WORK/java" ]; then
    mkdir -p "$WORK/java"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$SRC_ZIP" "$WORK/java"
fi
# code_eval reads an option's first occurrence: the arguments given override these.
cargo run -q --release -p neardup --example code_eval -- "$@" \
    --java "$WORK/java" --go "$GO_SRC" --corpora java,go --files "${FILES:-300}" \
    --widths 4 --jaccard 0.7
