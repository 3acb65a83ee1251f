#!/usr/bin/env bash
# Detection quality over several real corpora (issue 36): neardup beside datasketch, a
# grid of neardup settings, the default chosen by the worst corpus and leave-one-corpus-out.
#
# Corpora (bench-out/quality-corpora/<name>/corpus.jsonl, {"id", "body_text"} and "url"
# where hosts matter; meta.jsonl beside it names each record's base document and kind).
# Built once with fixed seeds from real text on this machine or fetched ONCE from the
# package registries into bench-out/quality-corpora/cache (never at test time); the Rust
# toolchain's documentation is never used (it is kept for acceptance testing).
#   recrawl    Django's documentation (docs/**/*.txt of the 4.1, 4.2 and 5.0 sdists from
#              PyPI, `pip download --no-deps --no-binary :all:`): every page of every
#              release is a record, url https://docs.example/<release>/<path>. Kinds: same
#              page next release, same page two releases apart, another page/path.
#   templates  Template-heavy hard negatives: gcloud reference man pages (GA, beta, alpha)
#              of 11 command groups rendered with `MANWIDTH=80 man -l` (git/systemd/perl...
#              pages where gcloud is absent), and Debian long descriptions (Translation-en,
#              fetched once with `apt-get update -o Acquire::Languages=en`) of whole source
#              families (-dev/-doc/-dbg/lib... share most words). Kinds: same command on
#              another track, different commands, same source package, different sources.
#   cjk        Debian fortunes-zh (installed with apt-get): quotes and Tang/Song poems, one
#              or several consecutive entries a document (30-1,500 Han characters), half of
#              them with realistic edits (character substitutions/insertions/deletions,
#              punctuation style, a moved sentence, a source line, truncation, two edits).
#   short      Short texts: English fortunes (Debian fortunes, <= 60 words), Debian package
#              short descriptions, man page titles (apropos), 40% with one small edit (typo,
#              one word, case/punctuation, attribution, prefix, reflow, repost).
#   chrome     8 hosts, each with its own navigation, sidebar and footer (man page titles and
#              licence text from /usr/share/common-licenses, 300-500 words, with a per-page
#              breadcrumb, related-pages list and date) around real articles (English man
#              pages, /usr/share/doc READMEs): 160 articles a host, 20% republished on
#              another host, 10% republished edited, 15% edited on their own host; a
#              quarter of the articles are stubs (their first 10-120 words), pages that
#              are mostly chrome.
#   manpages   The edited-man-page corpus of scripts/bench_quality.sh (`quality_eval corpus`:
#              copyright files, licences, 400 man pages and edited versions).
#
# Truth and metric (pair level, over ALL pairs):
#   * Text: the record's text fields as the CLI reads them (here body_text), analysed by the
#     library itself (corpus_truth example: SimHasher defaults: NFKC, lowercase, Unicode
#     words, Han/kana one token per character, 4-token shingles), so the truth is on the
#     same text the tool sees; J = exact Jaccard of the distinct shingle sets, every pair
#     with J >= 0.5 found with a prefix-filtered inverted index (exact, not sampled).
#   * J >= 0.8: a duplicate (positive); 0.5 <= J < 0.8: ambiguous, ignored (neither true
#     nor false when co-clustered, not missed when apart); J < 0.5: not a duplicate.
#   * Template pairs: two different base documents on one host of the chrome corpus whose
#     articles alone (chrome/articles/, the same truth without any chrome) have J < 0.5,
#     i.e. alike only through the host's template, are left out of recall, and counted in
#     precision: co-clustered, each is a false positive whatever its J. Different articles
#     whose own texts are alike are scored by J like any pair.
#   * Predicted pairs: every pair of records in one cluster (neardup: clusters.jsonl
#     `members`; datasketch: connected components of MinHashLSH candidates).
#   * P = TP / (TP + FP), R = TP / positives, F1; doc-level recall = share of the records
#     with a positive partner that share a cluster with at least one of them; recall per
#     kind of pair; the largest cluster. False positives are split into pairs of one base
#     document (e.g. a short text and its edit, which the truth calls different) and pairs
#     of different documents. Consequence on chrome: an article republished on another
#     host is a duplicate only when it outweighs both hosts' chrome (J over the whole
#     page); a system that strips boilerplate and merges a shorter one scores a false
#     positive of one base document.
#
# Systems, side by side in one run, 2 processes at a time at most:
#   * neardup dedup (release build), one fresh store per run, at its defaults;
#   * datasketch MinHashLSH(threshold 0.8, num_perm 128) over the same shingle sets (each
#     u64 as 8 little-endian bytes) + connected components of the candidates;
#   * neardup dedup over a grid of pass-through flags: --max-distance {12,14,16},
#     --min-jaccard {0.75,0.8}, linkage single/guarded (`--linkage` where `dedup --help`
#     lists it, else `--min-cluster-jaccard 0 --cluster-quorum 0` / the defaults),
#     --short-text {chars,exact}, boilerplate on/off (--no-boilerplate). GRID=small keeps
#     k=14 and J=0.8 (8 settings), GRID=full has all 48.
#   MIN_WORDS=50,8,1 adds a --min-words axis (not in the grid by default).
#   The default is the grid setting whose WORST corpus F1 is best (ties: higher worst
#   precision, then higher mean F1); leave-one-corpus-out: for each corpus, the setting
#   chosen that way on the others, scored on it against the targets (P >= 0.99,
#   R >= 0.95, F1 >= datasketch's).
#
# Usage: scripts/bench_quality_corpora.sh   (GRID=small: under a minute once the corpora
#        and binaries are built; a first run from nothing, downloads included, about 3
#        minutes plus the cargo builds; GRID=full about 2 minutes)
# Knobs: GRID=small|full, CORPORA=recrawl,templates,cjk,short,chrome,manpages, SEED=7,
#        REBUILD=1 (rebuild the corpora from the cache), JOBS=2 (at most 2),
#        MIN_WORDS= (e.g. 50,8,1: a --min-words axis for the grid),
#        NEARDUP_FLAGS= (flags added to the per-corpus "defaults" runs, to score a setting)
# Output: bench-out/quality-corpora/{results.json,results.md,<name>/...}
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bench-out/quality-corpora"
CACHE="$OUT/cache"
GRID="${GRID:-small}"
CORPORA="${CORPORA:-recrawl,templates,cjk,short,chrome,manpages}"
SEED="${SEED:-7}"
JOBS="${JOBS:-2}"
mkdir -p "$OUT" "$CACHE"
T0=$(date +%s)

echo "== detection quality over corpora: $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if ! .venv/bin/python -c "import datasketch" 2>/dev/null; then
    .venv/bin/pip install -q datasketch
fi
PY="$ROOT/.venv/bin/python"
export PYTHONDONTWRITEBYTECODE=1

echo "building neardup, corpus_truth and quality_eval (release)"
cargo build --release -q -p neardup-cli
cargo build --release -q -p neardup --example corpus_truth --example quality_eval
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
NEARDUP="$TARGET/release/neardup"
TRUTH="$TARGET/release/examples/corpus_truth"
EVAL="$TARGET/release/examples/quality_eval"

IFS=',' read -r -a NAMES <<<"$CORPORA"
for name in "${NAMES[@]}"; do
    dir="$OUT/$name"
    if [ "${REBUILD:-0}" = 1 ] || [ ! -s "$dir/corpus.jsonl" ] || [ ! -s "$dir/meta.jsonl" ]; then
        echo "corpus $name: building"
        case "$name" in
            manpages)
                mkdir -p "$dir"
                "$EVAL" corpus --out "$dir" --man-pages 400 --seed "$SEED"
                "$PY" scripts/bench_quality_corpora/build.py manpages-meta --out "$dir"
                ;;
            *)
                "$PY" scripts/bench_quality_corpora/build.py "$name" --out "$dir" \
                    --cache "$CACHE" --seed "$SEED"
                ;;
        esac
    fi
    # The truth follows the library's tokenisation as it is now: recomputed every run.
    "$TRUTH" --corpus "$dir/corpus.jsonl" --out "$dir" --threads "$JOBS"
    if [ -s "$dir/articles/corpus.jsonl" ]; then # chrome: the articles without chrome
        "$TRUTH" --corpus "$dir/articles/corpus.jsonl" --out "$dir/articles" --threads "$JOBS"
    fi
    rm -rf "$dir/runs"
done

PYTHONHASHSEED=0 "$PY" scripts/bench_quality_corpora/evaluate.py run --root "$OUT" \
    --corpora "$CORPORA" --neardup "$NEARDUP" --grid "$GRID" --jobs "$JOBS" \
    --min-words "${MIN_WORDS:-}" --out "$OUT/results.json" | tee "$OUT/results.md"
echo "total $(($(date +%s) - T0))s"
