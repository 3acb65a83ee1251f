#!/usr/bin/env python3
"""Builds examples/data/debian-copyright.jsonl.gz: the 400 smallest Debian copyright files of
this machine, one JSON record each. Real text that nobody here wrote, full of natural near
duplicates (packages that share a licence and differ in their copyright lines).

    python3 scripts/make_example.py
"""
import datetime
import glob
import gzip
import json
import os

files = sorted(glob.glob("/usr/share/doc/*/copyright"), key=lambda p: (os.path.getsize(p), p))[:400]
records = []
for path in sorted(files):
    pkg = path.split("/")[4]
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    records.append({
        "id": pkg,
        "url": f"file:///usr/share/doc/{pkg}/copyright",
        "first_seen": mtime.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "title": f"{pkg} copyright",
        "body_text": text,
    })
os.makedirs("examples/data", exist_ok=True)
with gzip.open("examples/data/debian-copyright.jsonl.gz", "wt", encoding="utf-8") as out:
    for r in records:
        out.write(json.dumps(r, ensure_ascii=False) + "\n")
print(f"{len(records)} records")
