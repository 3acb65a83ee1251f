#!/usr/bin/env bash
# Fuzzes the JSON Lines reader and the HTML extractor (fuzz/fuzz_targets/) with cargo-fuzz
# (libFuzzer), each target for a bounded time, starting from the committed seed corpus
# (fuzz/corpus/<target>/). Works on a stable toolchain: without a sanitizer (ASan needs
# nightly), the targets still catch panics, overflow (debug assertions are on), timeouts
# and runaway memory.
#
#   scripts/fuzz.sh                        # every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh json_line
#   FUZZ_GROW=1 scripts/fuzz.sh            # keep new inputs in the committed corpus
#   FUZZ_ARGS="-max_len=65536" scripts/fuzz.sh html_to_text   # more libFuzzer flags
#   RUSTUP_TOOLCHAIN=nightly FUZZ_SANITIZER=address scripts/fuzz.sh   # with ASan
#
# New inputs go to fuzz/target/corpus/<target>/ (not committed) unless FUZZ_GROW=1. On a
# crash the run stops, prints the failing input's path (fuzz/artifacts/<target>/crash-*)
# and how to reproduce it, and the script exits 1 after the other targets have run. Copy
# a fixed crash's input into fuzz/corpus/<target>/ so `cargo test` (tests/fuzz_corpus.rs)
# keeps checking it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
SANITIZER=${FUZZ_SANITIZER:-none}
read -r -a EXTRA <<<"${FUZZ_ARGS:-}"
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(json_line html_to_text)

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

mkdir -p fuzz/target
stamp=fuzz/target/fuzz-started
touch "$stamp"
failed=()
for t in "${TARGETS[@]}"; do
  corpus=(fuzz/corpus/"$t")
  if [ "${FUZZ_GROW:-0}" != 1 ]; then
    # libFuzzer writes new inputs to the first directory and reads them all.
    mkdir -p fuzz/target/corpus/"$t"
    corpus=(fuzz/target/corpus/"$t" fuzz/corpus/"$t")
  fi
  echo "== $t: ${SECONDS_EACH}s on ${corpus[*]}"
  if ! cargo fuzz run --sanitizer "$SANITIZER" "$t" "${corpus[@]}" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      "${EXTRA[@]}"; then
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} failed; inputs:" >&2
  for t in "${failed[@]}"; do
    find fuzz/artifacts/"$t" -type f -newer "$stamp" 2>/dev/null | sed 's/^/  /' >&2
  done
  exit 1
fi
echo "fuzz: ${TARGETS[*]}: no crash in ${SECONDS_EACH}s each"
