#!/usr/bin/env bash
# Code mode on vendored copies (issue 39): the files of pip's `_vendor` folder against the
# same releases of the libraries, fetched from PyPI (the versions pip's vendor.txt pins),
# word mode side by side. Real code nobody here wrote; pip edits its copies (imports
# rewritten to `pip._vendor...`, patches), which is what a vendored copy looks like.
#
# Usage: scripts/code_vendored.sh            (PYTHON=python3; WORK=target/vendored)
# Needs network access to PyPI on the first run (the wheels are kept in $WORK/wheels).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-$ROOT/target/vendored}"
VENDOR="$("$PYTHON" -c 'import os, pip; print(os.path.join(os.path.dirname(pip.__file__), "_vendor"))')"
PIP_VERSION="$("$PYTHON" -c 'import pip; print(pip.__version__)')"
echo "code_vendored.sh: pip $PIP_VERSION's vendored libraries in $VENDOR"
mkdir -p "$WORK/wheels"
# vendor.txt: `name==version` lines (indented ones are dependencies, vendored too).
sed 's/#.*//' "$VENDOR/vendor.txt" | awk 'NF {print $1}' > "$WORK/requirements.txt"
"$PYTHON" -m pip download -q --no-deps --disable-pip-version-check --dest "$WORK/wheels" \
    -r "$WORK/requirements.txt"
rm -rf "$WORK/originals"
mkdir -p "$WORK/originals"
for wheel in "$WORK"/wheels/*.whl; do
    name="$(basename "$wheel" .whl)"
    "$PYTHON" -m zipfile -e "$wheel" "$WORK/originals/$name"
done
# code_eval reads an option's first occurrence: the arguments given override these.
cargo run -q --release -p neardup --example code_eval -- "$@" \
    --vendored "$VENDOR" --originals "$WORK/originals" --k "${K:-16}" --jaccard "${JACCARD:-0.8}"
