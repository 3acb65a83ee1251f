#!/usr/bin/env python3
"""Code mode's rule (shingle width, k, Jaccard) chosen across corpora.

Reads the scored pairs `code_eval --dump FILE` writes (one JSON line per corpus, mode and
width: `positives`, `negatives` and, for pip's vendored copies, `elsewhere`, each a list of
[distance, jaccard]) and scores every rule of the grid on every corpus:

* precision = pairs the rule finds that are true (or the same module vendored elsewhere)
  over all it finds; recall = true pairs found over true pairs;
* the rewrite corpora (`--judge` names the others) say which rules meet the target: recall
  >= 0.95 at precision >= 0.99 on every one of them. Their negatives are distinct files, so
  they cannot tell a loose rule's cost; the judge corpus (pip's vendored libraries against
  their originals: real code, with files of one shape) does: of the rules that meet the
  target, the one with the best precision there is chosen (ties: higher worst recall, then
  the higher threshold);
* leave one corpus out: the rule chosen without a rewrite corpus, scored on it.

Usage: scripts/code_rule.py DUMP [--mode code] [--current 4,16,0.8] [--judge vendored]
"""
import argparse
import json
from collections import defaultdict

KS = list(range(8, 25, 2))
JS = [round(0.4 + 0.05 * i, 2) for i in range(11)]  # 0.40 .. 0.90


def load(path, mode):
    corpora = defaultdict(dict)  # corpus -> width -> line
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if d["mode"] == mode:
                corpora[d["corpus"]][d["width"]] = d
    return corpora


def score(d, k, j):
    hit = lambda p: p[0] <= k and p[1] >= j  # noqa: E731
    tp = sum(map(hit, d["positives"]))
    also = sum(map(hit, d.get("elsewhere", [])))
    fp = sum(map(hit, d["negatives"]))
    found = tp + also + fp
    p = (tp + also) / found if found else 1.0
    r = tp / max(len(d["positives"]), 1)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1


def table(corpora):
    widths = sorted(set.intersection(*(set(v) for v in corpora.values())))
    rows = {}
    for w in widths:
        for k in KS:
            for j in JS:
                rows[(w, k, j)] = {c: score(corpora[c][w], k, j) for c in corpora}
    return rows


def meets(cells, names, precision=0.99, recall=0.95):
    return all(cells[c][0] >= precision and cells[c][1] >= recall for c in names)


def rank(cells, names):
    f1 = [cells[c][2] for c in names]
    r = [cells[c][1] for c in names]
    return (round(min(f1), 6), round(min(r), 6), sum(f1) / len(f1))


def pick(rows, names, judge):
    """The rule meeting the target on `names` with the best precision on `judge`; where
    none meets it, the best worst-corpus F1."""
    ok = [s for s in rows if meets(rows[s], names)]
    if not ok:
        return max(rows, key=lambda s: (rank(rows[s], names), s[2], -s[1]))
    key = lambda s: (  # noqa: E731
        round(rows[s][judge][0], 6) if judge else 0,
        round(min(rows[s][c][1] for c in names), 6),
        s[2],
        -s[1],
    )
    return max(ok, key=key)


def show(s):
    return f"width {s[0]}, k {s[1]}, J {s[2]:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--mode", default="code")
    ap.add_argument("--current", default="4,16,0.8", help="width,k,J of the rule in use")
    ap.add_argument("--judge", default="vendored", help="the corpus whose precision decides")
    a = ap.parse_args()
    corpora = load(a.dump, a.mode)
    judge = a.judge if a.judge in corpora else None
    shown = [judge] if judge else []
    names = sorted(c for c in corpora if c not in shown)
    rows = table(corpora)
    w, k, j = a.current.split(",")
    current = (int(w), int(k), float(j))
    best = pick(rows, names, judge)
    print(f"{a.mode} mode: {len(rows)} rules; target (recall >= 0.95, precision >= 0.99) on "
          f"{', '.join(names)}" + (f"; precision judged on {judge}" if judge else ""))
    meeting = [s for s in rows if meets(rows[s], names)]
    print(f"{len(meeting)} rules meet the target\n")
    print("| rule | " + " | ".join(names + shown) + " | worst F1 | worst R |")
    print("|---|" + "---:|" * (len(names) + len(shown) + 2))
    top = sorted(meeting, key=lambda s: rows[s][judge][0] if judge else 0, reverse=True)[:8]
    for s in [current, best] + [s for s in top if s not in (current, best)]:
        if s not in rows:
            continue
        cells = " | ".join(f"{rows[s][c][0]:.3f} / {rows[s][c][1]:.3f}" for c in names + shown)
        f1, r, _ = rank(rows[s], names)
        tag = " (in use)" if s == current else (" (chosen)" if s == best else "")
        print(f"| {show(s)}{tag} | {cells} | {f1:.3f} | {r:.3f} |")
    print("\ncells: precision / recall\n")
    print("| left-out corpus | rule chosen on the others | P | R | F1 |")
    print("|---|---|---:|---:|---:|")
    for c in names:
        s = pick(rows, [n for n in names if n != c], judge)
        p, r, f1 = rows[s][c]
        print(f"| {c} | {show(s)} | {p:.3f} | {r:.3f} | {f1:.3f} |")


if __name__ == "__main__":
    main()
