#!/usr/bin/env bash
# Detection quality of neardup against an exact brute-force Jaccard ground truth, side by
# side with datasketch MinHashLSH (threshold 0.8, 128 permutations) and seed 000's Python
# reference pipeline, on the same real text.
#
# Corpus (deterministic, built from this machine, nothing downloaded): every
# /usr/share/doc/*/copyright, every licence in /usr/share/common-licenses, MAN_PAGES English
# man pages rendered with `man -l`, plus edited versions of about half of them (word
# substitutions/insertions/deletions from 1 word to ~12% of the words, a moved paragraph or
# sentence, a byline/date/trailer or changed years, a truncation of the last 5-15%, changed
# whitespace/case/punctuation, and combinations; some documents get two independent edits,
# some an edit of an edit). Records carry no URL, so no boilerplate is learned and the ground
# truth is the plain shingle sets (different packages' copyright files are not one site's
# templated pages: treating their shared licence text as boilerplate would be wrong).
#
# Ground truth: exact Jaccard of the library's own 4-word shingle sets
# (SimHasher::shingle_set) over ALL pairs; truth pairs are J >= 0.8.
# neardup: the library Deduper with Rule::default() (and other rules for context), and the
# CLI `neardup dedup` with its defaults; predicted pairs = all pairs in one final cluster.
#
# Usage: scripts/bench_quality.sh   (about 3 minutes: most of it is seed 000's Python)
# Knobs: MAN_PAGES (400), SEED (7)
# Output: bench-out/quality/{corpus.jsonl,eval.txt,peers.txt,results.json,peers.json,cli/}
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bench-out/quality"
MAN_PAGES="${MAN_PAGES:-400}"
SEED="${SEED:-7}"
mkdir -p "$OUT"

echo "== detection quality: $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if ! .venv/bin/python -c "import datasketch" 2>/dev/null; then
    .venv/bin/pip install -q datasketch
fi

echo "building quality_eval and neardup (release)"
cargo build --release -q -p neardup --example quality_eval
cargo build --release -q -p neardup-cli
EVAL="$ROOT/target/release/examples/quality_eval"

"$EVAL" corpus --out "$OUT" --man-pages "$MAN_PAGES" --seed "$SEED"

# The CLI main job with its defaults, on the same file.
rm -rf "$OUT/cli" "$OUT/cli.db"
/usr/bin/time -f "neardup dedup: %e s wall, %M KB peak RSS" \
    target/release/neardup dedup --jsonl "$OUT/corpus.jsonl" --out "$OUT/cli" \
    --store "$OUT/cli.db" --quiet || [ $? -eq 2 ] # 2: some records rejected

"$EVAL" eval --corpus "$OUT/corpus.jsonl" --out "$OUT" --cli-out "$OUT/cli" | tee "$OUT/eval.txt"
echo
PYTHONHASHSEED=0 .venv/bin/python scripts/bench_quality/peers.py quality --dir "$OUT" \
    --corpus "$OUT/corpus.jsonl" | tee "$OUT/peers.txt"
