#!/usr/bin/env bash
# The Python package's tests: builds the wheel into a venv (target/py-venv) the way the
# README installs it, then runs pytest against the workspace's `neardup` binary (built if
# missing). Needs python3 with venv and network access to PyPI for maturin, numpy,
# pyarrow, pandas, pyspark and pytest, and Java 17 for pyspark (`.ci/run` installs it): the
# Spark tests run on a local[2] master and never skip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/target/py-venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --upgrade pip
# pyspark pinned with a pandas its Arrow paths support.
"$VENV/bin/pip" install -q numpy pyarrow pytest "pandas==2.2.3" "pyspark==4.0.1"
command -v java >/dev/null || { echo "java is missing: the Spark tests need Java 17 (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
# The README's install command (rebuilt from the tree every time), its build kept under target/.
CARGO_TARGET_DIR="$ROOT/target/python" "$VENV/bin/pip" install -q --force-reinstall --no-deps ./crates/python
# The CLI the tests compare with: the workspace's debug build (where CARGO_TARGET_DIR puts it).
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
[ -x "$TARGET/debug/neardup" ] || cargo build -q -p neardup-cli
NEARDUP_BIN="$TARGET/debug/neardup" "$VENV/bin/python" -m pytest -q crates/python/tests "$@"
