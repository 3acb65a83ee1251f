"""Real text from this machine for the Spark tests and scripts/bench_spark.sh: man pages,
/usr/share/doc copyright files and changelogs, and fortune cookies (`fortunes`,
`fortunes-zh`). Nobody here wrote it, and it holds real exact and near copies (translated
man pages of one tool, licences shared by packages, the .u8 copies of fortune files)."""

from __future__ import annotations

import gzip
import itertools
import os
import random

def _files(root: str, keep) -> list:
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if not os.path.islink(path) and keep(name):
                out.append(path)
    return out


def _read(path: str, limit: int) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _fortunes() -> list:
    """Every fortune cookie (`fortunes`, `fortunes-zh`): short real texts, some of them in
    several files (the .u8 copies), so exact and near copies are there to find."""
    out = []
    for path in _files("/usr/share/games/fortunes", lambda n: not n.endswith(".dat")):
        text = _read(path, 1 << 22)
        for i, cookie in enumerate(text.split("\n%\n")):
            if cookie.strip():
                out.append((f"fortune:{os.path.basename(path)}:{i}", cookie))
    return out


def real_records(total: int = 12_000) -> list:
    """Man pages, /usr/share/doc copyright files and changelogs, and fortunes: up to a third
    of `total` each, topped up from whichever has more, in a fixed order."""
    max_bytes = 16_384
    man = [(p, None) for p in _files("/usr/share/man", lambda n: n.endswith(".gz"))]
    docs = [
        (p, None)
        for p in _files(
            "/usr/share/doc",
            lambda n: n == "copyright" or (n.startswith("changelog") and n.endswith(".gz")),
        )
    ]
    sources = [man, docs, _fortunes()]
    share = total // 3
    picked = [s[:share] for s in sources]
    spare = total - sum(len(p) for p in picked)
    for s, p in zip(sources, picked):
        extra = s[len(p) : len(p) + spare]
        p.extend(extra)
        spare -= len(extra)
    records = []
    for key, text in itertools.chain(*picked):
        if text is None:
            text = _read(key, max_bytes)
        records.append(
            {"id": key, "url": "file://" + key, "first_seen": "2026-01-01T00:00:00Z", "text": text[:max_bytes]}
        )
    return records


def recrawl(records: list, share: float = 0.5, seed: int = 7) -> list:
    """A second crawl of `share` of the records, each lightly edited (about one word in 40
    replaced or dropped) and seen a day later: the near copies a recrawl brings."""
    rng = random.Random(seed)
    out = []
    for r in records:
        if rng.random() >= share:
            continue
        words = r["text"].split(" ")
        for _ in range(max(1, len(words) // 40)):
            i = rng.randrange(len(words))
            if rng.random() < 0.5:
                words[i] = f"w{rng.randrange(1 << 20)}"
            else:
                del words[i]
                if not words:
                    break
        out.append(dict(r, id=r["id"] + "#recrawl", first_seen="2026-01-02T00:00:00Z", text=" ".join(words)))
    return out
