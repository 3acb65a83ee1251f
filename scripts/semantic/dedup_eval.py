#!/usr/bin/env python3
"""`neardup dedup` with and without the semantic stage on one paraphrase corpus: pairwise
precision and recall of the clusters, and records per second.

    dedup_eval.py NEARDUP NAME OLD.jsonl NEW.jsonl OUTDIR -- [dedup args for the stage...]

OLD and NEW are one thing's documentation in two releases, {"key", "text"} a line (as
scripts/semantic/docstrings.py and rustdocs.py print it). The texts are selected as the
`semantic_eval` example selects them: module docstrings, texts under 8 words and texts that
several keys of a release share are left out; a key is its qualified name alone where that
is unique in both releases. The same key in both releases is a true pair, reworded or not;
every other pair of an old and a new text is not. A pair is predicted when the run puts both
in one cluster. Prints one JSON object: per run (`jaccard`: the default rule; `semantic`:
with the arguments after `--`) the counts, precision, recall, the recall of reworded pairs,
F1, and records per second of the whole run (wall time, reading and writing included).
"""
import json
import subprocess
import sys
import time
from collections import Counter
from itertools import combinations
from pathlib import Path

MIN_WORDS = 8


def read(path):
    with open(path, encoding="utf-8") as f:
        return [(o["key"], o["text"]) for o in map(json.loads, f)]


def norm(text):
    return " ".join(text.split())


def usable(docs):
    shared = Counter(norm(t) for _, t in docs)
    return [
        (k, t)
        for k, t in docs
        if not k.endswith(":<module>")
        and len(t.split()) >= MIN_WORDS
        and shared[norm(t)] == 1
    ]


def qualname(key):
    return key.rsplit(":", 1)[-1]


def shorten(old, new):
    unique = Counter(qualname(k) for k, _ in old)
    unique_new = Counter(qualname(k) for k, _ in new)

    def short(k):
        q = qualname(k)
        return q if unique[q] == 1 and unique_new[q] == 1 else k

    return [(short(k), t) for k, t in old], [(short(k), t) for k, t in new]


def run(neardup, inp, out, extra):
    out.mkdir(parents=True, exist_ok=True)
    store = out / "store.db"
    store.unlink(missing_ok=True)
    started = time.monotonic()
    subprocess.run(
        [neardup, "dedup", "--quiet", "--jsonl", "--store", str(store), "--out", str(out), str(inp)]
        + extra,
        check=True,
    )
    secs = time.monotonic() - started
    clusters = []
    with open(out / "clusters.jsonl", encoding="utf-8") as f:
        for line in f:
            clusters.append(json.loads(line)["members"])
    rules = Counter()
    with open(out / "merges.jsonl", encoding="utf-8") as f:
        for line in f:
            rules[json.loads(line)["rule"]] += 1
    return clusters, secs, dict(rules)


def score(clusters, texts):
    tp = fp = reworded_tp = 0
    for members in clusters:
        for a, b in combinations(members, 2):
            (ra, ka), (rb, kb) = a.split("|", 1), b.split("|", 1)
            if ra == rb:
                continue
            if ka == kb:
                tp += 1
                reworded_tp += norm(texts[a]) != norm(texts[b])
            else:
                fp += 1
    return tp, fp, reworded_tp


def main():
    neardup, name, old_path, new_path, outdir = sys.argv[1:6]
    extra = sys.argv[7:] if len(sys.argv) > 6 and sys.argv[6] == "--" else []
    old, new = shorten(usable(read(old_path)), usable(read(new_path)))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    inp = outdir / f"{name}.jsonl"
    texts = {}
    with open(inp, "w", encoding="utf-8") as f:
        for release, docs in (("old", old), ("new", new)):
            for k, t in docs:
                texts[f"{release}|{k}"] = t
                f.write(json.dumps({"id": f"{release}|{k}", "text": t}, ensure_ascii=False) + "\n")
    new_by_key = dict(new)
    true_pairs = [k for k, _ in old if k in new_by_key]
    reworded = sum(norm(t) != norm(new_by_key[k]) for k, t in old if k in new_by_key)
    result = {"corpus": name, "records": len(texts), "true_pairs": len(true_pairs), "reworded": reworded}
    for label, args in (("jaccard", []), ("semantic", extra)):
        clusters, secs, rules = run(neardup, inp, outdir / f"{name}-{label}", args)
        tp, fp, rtp = score(clusters, texts)
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / len(true_pairs) if true_pairs else 1.0
        result[label] = {
            "tp": tp,
            "fp": fp,
            "precision": round(p, 3),
            "recall": round(r, 3),
            "reworded_recall": round(rtp / reworded, 3) if reworded else None,
            "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0,
            "seconds": round(secs, 1),
            "records_per_s": round(len(texts) / secs, 1),
            "merges_by_rule": rules,
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
