#!/usr/bin/env python3
"""Rewrites a bench corpus (JSONL with id, url, body_text) in seed 000's record shape.

Each record gets a title (its body's first line), a description (the next three lines), its
host, a first_seen time and a source, besides its id, url and body_text: the shape of the
scraped records seed 000 deduplicates, whose first_seen kept.jsonl sets itself. Stops after
LIMIT bytes of body text (default 150 MB).

    python3 scripts/seed_shape.py bench-out/dedup/corpus-1gb.jsonl seed.jsonl [LIMIT]
"""
import json
import sys
from urllib.parse import urlsplit


def main():
    src, dst = sys.argv[1], sys.argv[2]
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 150e6
    total = records = 0
    with open(src, encoding="utf-8") as inp, open(dst, "w", encoding="utf-8") as out:
        for line in inp:
            r = json.loads(line)
            body = r.get("body_text", "")
            lines = [x.strip() for x in body.split("\n") if x.strip()]
            url = r.get("url") or ""
            shaped = {
                "id": r["id"],
                "url": url,
                "host": urlsplit(url).hostname or "",
                "title": lines[0][:120] if lines else "",
                "description": " ".join(lines[1:4])[:300],
                "body_text": body,
                "first_seen": "2026-01-%02dT10:00:00Z" % (1 + records % 28),
                "source": "crawl",
            }
            out.write(json.dumps(shaped, ensure_ascii=False) + "\n")
            total += len(body.encode("utf-8"))
            records += 1
            if total >= limit:
                break
    print(f"{records} records, {total / 1e6:.1f} MB of body text", file=sys.stderr)


if __name__ == "__main__":
    main()
