#!/usr/bin/env bash
# Code mode against word mode on real JavaScript and TypeScript (issue 39): the rewrite
# measurement of `code_eval` on npm packages people wrote by hand, fetched from the npm
# registry at pinned versions (builds, minified files and type declarations are left out
# by code_eval). JavaScript: lodash, moment, jQuery's src, axios, express; TypeScript: the
# sources rxjs and immer ship.
#
# Usage: scripts/code_npm.sh [code_eval args]   (WORK=target/npm; FILES=300)
# Needs network access to registry.npmjs.org on the first run (tarballs kept in $WORK).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${WORK:-$ROOT/target/npm}"
PACKAGES="lodash@4.17.21 moment@2.29.4 jquery@3.7.1 axios@1.6.2 express@4.18.2 rxjs@7.8.1 immer@10.0.3"
mkdir -p "$WORK/tarballs" "$WORK/packages"
for spec in $PACKAGES; do
    name="${spec%@*}"
    version="${spec#*@}"
    tarball="$WORK/tarballs/$name-$version.tgz"
    [ -s "$tarball" ] || curl -sSf -m 120 -o "$tarball" \
        "https://registry.npmjs.org/$name/-/$name-$version.tgz"
    rm -rf "$WORK/packages/$name-$version"
    mkdir -p "$WORK/packages/$name-$version"
    tar xzf "$tarball" -C "$WORK/packages/$name-$version"
done
# code_eval reads an option's first occurrence: the arguments given override these.
cargo run -q --release -p neardup --example code_eval -- "$@" \
    --npm "$WORK/packages" --corpora javascript,typescript --files "${FILES:-300}" \
    --widths 4 --jaccard 0.7
