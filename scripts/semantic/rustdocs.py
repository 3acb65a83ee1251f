"""Doc comments of a Rust crate's sources, one JSON object a line: {"key", "text"}.

`python3 rustdocs.py CRATE_DIR > out.jsonl`. A run of `///` lines documents the item that
follows it; the key is the file's path under src/ and the item's name (`map.rs:HashMap.insert`
style is not recovered: a name used twice in one file gets `#2`, `#3`, ... in order).
"""
import json
import os
import re
import sys

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?"
    r"(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)"
)


def docs(path):
    out, block = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.startswith("///") and not s.startswith("////"):
                block.append(s[3:][1:] if s[3:].startswith(" ") else s[3:])
                continue
            if block and (s.startswith("#[") or not s):
                continue
            if block:
                m = ITEM.match(line)
                if m:
                    out.append((m.group(1), "\n".join(block).strip()))
            block = []
    return out


def main():
    root = os.path.join(sys.argv[1], "src")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            seen = {}
            for item, text in docs(path):
                seen[item] = seen.get(item, 0) + 1
                key = rel + ":" + item + ("#%d" % seen[item] if seen[item] > 1 else "")
                if text:
                    print(json.dumps({"key": key, "text": text}, ensure_ascii=False))


if __name__ == "__main__":
    main()
