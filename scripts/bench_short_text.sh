#!/usr/bin/env bash
# Short-text policy measurement: exact tier only vs character n-gram SimHash, on real short
# texts (Debian's fortunes and fortunes-zh). Installs the packages when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d /usr/share/games/fortunes ] || [ ! -f /usr/share/games/fortunes/tang300 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fortunes fortunes-zh >/dev/null
  else
    echo "install the Debian packages fortunes and fortunes-zh first" >&2
    exit 2
  fi
fi
echo "== short-text policy: $(date -u '+%F %T UTC'), $(nproc) cores =="
cargo run --release -q -p neardup --example short_text_eval
