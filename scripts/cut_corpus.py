#!/usr/bin/env python3
"""Cuts a bench corpus (JSONL with id, url, title, body_text) into short records.

Each record's body is cut at the first space after every SIZE bytes (default 1500); each
piece becomes a record of its own (`ID#k`, `URL#pk`, the record's title). Copies and edits of
a document cut at the same places stay near duplicates of each other. Stops after LIMIT bytes
of text (default 300 MB).

    python3 scripts/cut_corpus.py bench-out/dedup/corpus-1gb.jsonl short.jsonl [SIZE] [LIMIT]
"""
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 1500
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 300e6
    total = records = 0
    with open(src, encoding="utf-8") as inp, open(dst, "w", encoding="utf-8") as out:
        for line in inp:
            r = json.loads(line)
            body = r.get("body_text", "")
            i = k = 0
            while i < len(body):
                j = i + size
                if j < len(body):
                    space = body.find(" ", j)
                    j = len(body) if space < 0 else space
                piece = body[i:j]
                out.write(json.dumps({
                    "id": f"{r['id']}#{k}",
                    "url": r.get("url", "") + f"#p{k}",
                    "title": r.get("title", ""),
                    "body_text": piece,
                }) + "\n")
                total += len(piece.encode())
                records += 1
                k += 1
                i = j
            if total > limit:
                break
    print(f"{records} records, {total} bytes of body text")


if __name__ == "__main__":
    main()
