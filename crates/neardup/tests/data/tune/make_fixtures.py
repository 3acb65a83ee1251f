#!/usr/bin/env python3
"""Writes the fixtures of `neardup tune`, `label`, `eval` and `explain` tests.

Synthetic text from a fixed vocabulary and seed (no copyrighted text): base articles, copies
with a few edits (duplicates), copies with a changed byline and trailer (duplicates), heavy
rewrites and pages that share only a site template (not duplicates), and unrelated pages.
Run from this directory: python3 make_fixtures.py
"""
import json
import random

rng = random.Random(20240601)
VOCAB = """time year people way day man thing woman life child world school state family student
group country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book eye
job word business issue side kind head house service friend father power hour game line end
member law car city community name president team minute idea kid body information back parent
face others level office door health person art war history party result change morning reason
research girl guy moment air teacher force education river bridge harbour council budget market
price farmer harvest weather storm train station museum library garden festival village road
report plan project vote court judge police hospital doctor nurse energy plant factory worker
union strike contract island coast ferry tourist season summer winter spring autumn rain snow
wind bread coffee dinner music concert theatre film actor singer painter writer poet novel""".split()
NAV = "home news sport weather business culture opinion contact subscribe login".split()
FOOT = "copyright all rights reserved privacy policy terms of use cookie settings advertise with us".split()


def article(n=150):
    return [rng.choice(VOCAB) for _ in range(n)]


def edit(words, k):
    w = list(words)
    for i in rng.sample(range(len(w)), k):
        w[i] = rng.choice(VOCAB) + "s"
    return w


def text(words):
    out, sentence = [], []
    for i, word in enumerate(words):
        sentence.append(word)
        if len(sentence) >= 12 or i == len(words) - 1:
            s = " ".join(sentence)
            out.append(s[0].upper() + s[1:] + ".")
            sentence = []
    return " ".join(out)


records = []  # (id, text)
truth = []  # (a_id, b_id, duplicate)
pairs = []  # (a_text, b_text, duplicate)

for n in range(6):
    base = article()
    bid = f"art{n}"
    records.append((bid, text(base)))
    variants = [
        (f"art{n}-typo", edit(base, 1), True),
        (f"art{n}-edits", edit(base, 4), True),
        (f"art{n}-byline", ["by", "staff", "reporter", "updated", "monday"] + base[3:] + ["read", "more", "stories", "like", "this", "on", "our", "site"], True),
        (f"art{n}-heavy", edit(base, 9), True),
        (f"art{n}-rewrite", edit(base, 14), False),
        (f"art{n}-half", base[:70] + article(80), False),
    ]
    for vid, words, dup in variants:
        records.append((vid, text(words)))
        truth.append((bid, vid, dup))
        pairs.append((text(base), text(words), dup))
    # Two pages of one site: same template, different bodies.
    a = NAV + article(60) + FOOT
    b = NAV + article(60) + FOOT
    records.append((f"site{n}-a", text(a)))
    records.append((f"site{n}-b", text(b)))
    truth.append((f"site{n}-a", f"site{n}-b", False))
    pairs.append((text(a), text(b), False))
# Unrelated pairs.
for n in range(4):
    truth.append((f"art{n}", f"art{n + 1}", False))
    pairs.append((text(article()), text(article()), False))

with open("corpus.jsonl", "w") as f:
    for rid, t in records:
        f.write(json.dumps({"id": rid, "text": t}) + "\n")
with open("truth.jsonl", "w") as f:
    for a, b, d in truth:
        f.write(json.dumps({"a_id": a, "b_id": b, "duplicate": d}) + "\n")
with open("pairs.jsonl", "w") as f:
    for a, b, d in pairs:
        f.write(json.dumps({"a": a, "b": b, "duplicate": d}) + "\n")
with open("pairs.tsv", "w") as f:
    f.write("a\tb\tduplicate\n")
    for a, b, d in pairs[:12]:
        f.write(f"{a}\t{b}\t{'true' if d else 'false'}\n")
# A hand-made prediction: every base with its typo and byline copies, one wrong merge.
with open("clusters.jsonl", "w") as f:
    for n in range(6):
        members = [f"art{n}", f"art{n}-typo", f"art{n}-byline"]
        if n == 0:
            members.append("art0-half")
        f.write(json.dumps({"cluster": n + 1, "survivor": f"art{n}", "members": members}) + "\n")
# Bad files: a missing side, a non-boolean label, an empty file.
good = json.dumps({"a": "one text", "b": "another", "duplicate": True})
with open("bad_missing_side.jsonl", "w") as f:
    f.write(good + "\n" + good + "\n" + json.dumps({"a": "only one side", "duplicate": False}) + "\n")
with open("bad_label.jsonl", "w") as f:
    f.write(good + "\n" + json.dumps({"a": "x y", "b": "x z", "duplicate": "yes"}) + "\n")
with open("bad_label.tsv", "w") as f:
    f.write("a\tb\tduplicate\nsome text\tother text\tmaybe\n")
open("empty.jsonl", "w").close()
