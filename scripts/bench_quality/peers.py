#!/usr/bin/env python3
"""Python peers for the quality and throughput benches.

* datasketch MinHashLSH(threshold=0.8, num_perm=128);
* seed 000's reference pipeline: its shingles(), simhash(), 4 bands of 16 bits with k=3 and
  Jaccard verification at 0.82, copied verbatim below, with a small in-memory stand-in for
  the Redis client (sadd / smembers / pipeline) so the seed's functions run unchanged.

quality mode (scripts/bench_quality.sh, scripts/bench_dedup.sh's labelled sample):
    peers.py quality --dir DIR --corpus DIR/corpus.jsonl
  reads DIR/shingles.jsonl (neardup's exact 4-word shingle sets, u64, one line per document
  in corpus order), DIR/truth.jsonl (every pair with exact J >= 0.5, by document index) and
  DIR/results.json (neardup's rows, from quality_eval eval); predicted pairs of each system
  are all pairs in one connected component of its accepted edges; prints one table with
  P/R/F1 of every system and the target checks; writes DIR/peers.json.
  datasketch gets the SAME shingle sets as the ground truth (each u64 as 8 little-endian
  bytes); the seed pipeline works from the text with its own tokenisation, as written.

full mode (scripts/bench_dedup.sh with PEERS_FULL=1):
    peers.py full --dir DIR --corpus FILE --out FILE.json
  runs datasketch over the WHOLE corpus FILE, as neardup's CLI run does (text shingled in
  Python with seed 000's shingles(): NFKC, lowercase, \w+ words, 4-word windows; clusters =
  connected components of LSH candidates), then scores its clusters on DIR's labelled pairs
  (DIR/shingles.jsonl names the sample's documents, DIR/truth.jsonl their pairs), as
  neardup's full-run clusters are scored: the same input, the same pairs.

throughput mode (scripts/bench_dedup.sh):
    peers.py throughput --corpus FILE --budget SECONDS --out FILE.json
  runs each peer end to end from JSONL text (parse, shingle, sketch/fingerprint, query,
  verify, insert) on one thread until the time budget is spent; reports MB/s of body text.
"""

import argparse
import json
import os
import sys
import time

import re
import unicodedata
import hashlib
from collections import Counter

# ----------------------------------------------------------------------------------------
# Seed 000, verbatim (only the Redis server is replaced by FakeRedis below).

BOILERPLATE_MIN_SHARE = 0.05      # a shingle on >5% of a host's pages is furniture

def shingles(text: str, width: int = 4) -> list[str]:
    """Overlapping word n-grams: word order matters, exact formatting does not."""
    normalised = unicodedata.normalize("NFKC", text).lower()
    tokens = re.findall(r"\w+", normalised)
    if len(tokens) < width:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)]

def content_text(record: dict) -> str:
    """Extracted content only — never the markup."""
    return "\n".join(filter(None, (record.get("title"), record.get("description"),
                                   record.get("body_text"))))

def simhash(text: str, bits: int = 64, boilerplate: frozenset[str] = frozenset()) -> int:
    counts = Counter(s for s in shingles(text) if s not in boilerplate)
    if not counts:
        return 0

    vector = [0] * bits
    for shingle, weight in counts.items():
        digest = int.from_bytes(
            hashlib.blake2b(shingle.encode("utf-8"), digest_size=8).digest(), "big")
        for bit in range(bits):
            vector[bit] += weight if (digest >> bit) & 1 else -weight

    value = 0
    for bit in range(bits):
        if vector[bit] > 0:
            value |= 1 << bit
    return value

def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()

BANDS = 4
BAND_BITS = 64 // BANDS

def band_keys(fingerprint: int) -> list[tuple[int, int]]:
    return [(band, (fingerprint >> (band * BAND_BITS)) & ((1 << BAND_BITS) - 1))
            for band in range(BANDS)]

def index_fingerprint(redis, record_id: str, fingerprint: int) -> None:
    pipe = redis.pipeline()
    for band, key in band_keys(fingerprint):
        pipe.sadd(f"simhash:{band}:{key}", f"{record_id}:{fingerprint}")
    pipe.execute()

def find_candidates(redis, fingerprint: int, max_distance: int = 3) -> list[tuple[str, int]]:
    seen, matches = set(), []
    for band, key in band_keys(fingerprint):
        for member in redis.smembers(f"simhash:{band}:{key}"):
            record_id, raw = member.decode().rsplit(":", 1)
            if record_id in seen:
                continue
            seen.add(record_id)
            distance = hamming(fingerprint, int(raw))
            if distance <= max_distance:
                matches.append((record_id, distance))
    return sorted(matches, key=lambda m: m[1])

def jaccard(a: str, b: str) -> float:
    sa, sb = set(shingles(a)), set(shingles(b))
    return len(sa & sb) / len(sa | sb) if (sa or sb) else 1.0

def is_near_duplicate(new_text: str, existing_text: str,
                      distance: int, threshold: float = 0.82) -> tuple[bool, float]:
    similarity = jaccard(new_text, existing_text)
    return similarity >= threshold, similarity

# ----------------------------------------------------------------------------------------


class FakeRedis:
    """The three Redis calls the seed uses, in memory (bytes members, like redis-py)."""

    def __init__(self):
        self.sets = {}

    def smembers(self, key):
        return self.sets.get(key, ())

    def pipeline(self):
        return _Pipe(self)


class _Pipe:
    def __init__(self, r):
        self.r, self.ops = r, []

    def sadd(self, key, member):
        self.ops.append((key, member.encode()))

    def execute(self):
        for key, member in self.ops:
            self.r.sets.setdefault(key, set()).add(member)
        self.ops = []


class SeedPipeline:
    """Seed 000 as a streaming deduper: each record is fingerprinted, its candidates within
    3 bits are verified nearest first, the first that passes (Jaccard >= 0.82) is its
    match; every record is indexed."""

    def __init__(self):
        self.redis = FakeRedis()
        self.texts = {}

    def add(self, record_id: str, record: dict):
        text = content_text(record)
        fingerprint = simhash(text)
        match = None
        for cand, distance in find_candidates(self.redis, fingerprint, max_distance=3):
            ok, _ = is_near_duplicate(text, self.texts[cand], distance)
            if ok:
                match = cand
                break
        index_fingerprint(self.redis, record_id, fingerprint)
        self.texts[record_id] = text
        return match


class UnionFind:
    def __init__(self, n):
        self.p = list(range(n))

    def find(self, x):
        while self.p[x] != x:
            self.p[x] = self.p[self.p[x]]
            x = self.p[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[max(ra, rb)] = min(ra, rb)


def component_pairs(n, edges):
    uf = UnionFind(n)
    for a, b in edges:
        uf.union(a, b)
    groups = {}
    for i in range(n):
        groups.setdefault(uf.find(i), []).append(i)
    pairs = set()
    largest = 0
    clusters = 0
    for g in groups.values():
        if len(g) < 2:
            continue
        clusters += 1
        largest = max(largest, len(g))
        for x in range(len(g)):
            for y in range(x + 1, len(g)):
                pairs.add((g[x], g[y]))
    return pairs, clusters, largest


def score(name, n, edges, truth08, jmap, seconds):
    pairs, clusters, largest = component_pairs(n, edges)
    tp = len(pairs & truth08)
    p = tp / len(pairs) if pairs else 1.0
    r = tp / len(truth08) if truth08 else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    edge_set = {(min(a, b), max(a, b)) for a, b in edges}
    edge_ok = sum(1 for e in edge_set if e in truth08)
    bands = {"[0.75,0.8)": 0, "[0.7,0.75)": 0, "[0.6,0.7)": 0, "[0.5,0.6)": 0, "<0.5": 0}
    for pr in pairs - truth08:
        j = jmap.get(pr, 0.0)
        k = ("[0.75,0.8)" if j >= 0.75 else "[0.7,0.75)" if j >= 0.7 else
             "[0.6,0.7)" if j >= 0.6 else "[0.5,0.6)" if j >= 0.5 else "<0.5")
        bands[k] += 1
    return {"name": name, "precision": p, "recall": r, "f1": f1,
            "predicted_pairs": len(pairs), "true_positives": tp, "truth_pairs": len(truth08),
            "edges": len(edge_set),
            "edge_precision": edge_ok / len(edge_set) if edge_set else None,
            "clusters": clusters, "largest_cluster": largest,
            "fp_jaccard_bands": bands, "seconds": seconds}


def quality(args):
    from datasketch import MinHash, MinHashLSH
    import datasketch
    d = args.dir
    results = json.load(open(os.path.join(d, "results.json")))
    ids, sets = [], []
    with open(os.path.join(d, "shingles.jsonl")) as f:
        for line in f:
            o = json.loads(line)
            ids.append(o["id"])
            sets.append(o["s"])
    n = len(ids)
    index = {x: i for i, x in enumerate(ids)}
    truth08, jmap = read_truth(d)
    records = {}
    with open(args.corpus) as f:
        for line in f:
            o = json.loads(line)
            if o["id"] in index:
                records[o["id"]] = o
    print(f"peers on {n} documents, {len(truth08)} pairs with J >= 0.8 "
          f"(datasketch {datasketch.__version__}, python {sys.version.split()[0]})",
          flush=True)

    rows = []
    # datasketch MinHashLSH on neardup's shingle sets.
    t = time.perf_counter()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    mins, edges, checked = [], [], []
    for i, s in enumerate(sets):
        m = MinHash(num_perm=128)
        m.update_batch([x.to_bytes(8, "little") for x in s])
        for c in lsh.query(m):
            edges.append((c, i))
            if m.jaccard(mins[c]) >= 0.8:
                checked.append((c, i))
        lsh.insert(i, m)
        mins.append(m)
    secs = time.perf_counter() - t
    rows.append(score("datasketch MinHashLSH(0.8, 128 perm)", n, edges, truth08, jmap, secs))
    rows.append(score("  (context) + MinHash estimate >= 0.8", n, checked, truth08, jmap, secs))
    print(f"datasketch: {secs:.1f}s", flush=True)

    # Seed 000's pipeline on the text.
    t = time.perf_counter()
    seed = SeedPipeline()
    edges = []
    for i, x in enumerate(ids):
        m = seed.add(str(i), records[x])
        if m is not None:
            edges.append((int(m), i))
    secs = time.perf_counter() - t
    rows.append(score("seed 000 reference (k=3, J>=0.82)", n, edges, truth08, jmap, secs))
    print(f"seed 000: {secs:.1f}s", flush=True)

    json.dump({"systems": rows}, open(os.path.join(d, "peers.json"), "w"), indent=1)

    allrows = results["systems"] + rows
    print()
    print(f"Detection quality on {results['documents']} documents ({results['bytes'] / 1e6:.1f} MB), "
          f"{results['pairs']} pairs, {results['truth_pairs']} with exact shingle Jaccard >= 0.8; "
          f"predicted pairs = pairs in one final cluster")
    hdr = f"{'system':<48} {'pred':>7} {'TP':>7} {'P':>7} {'R':>7} {'F1':>7} {'edge P':>7} {'largest':>7} {'sec':>7}"
    print(hdr)
    print("-" * len(hdr))
    for r in allrows:
        ep = "-" if r.get("edge_precision") is None else f"{r['edge_precision']:.4f}"
        print(f"{r['name'][:48]:<48} {r['predicted_pairs']:>7} {r['true_positives']:>7} "
              f"{r['precision']:>7.4f} {r['recall']:>7.4f} {r['f1']:>7.4f} {ep:>7} "
              f"{r.get('largest_cluster', 0):>7} {r['seconds']:>7.2f}")
    print()
    nd = results["systems"][0]
    ds = rows[0]
    print("false positives by exact J:")
    for r in allrows:
        if "fp_jaccard_bands" in r:
            print(f"  {r['name'][:48]:<48} {r['fp_jaccard_bands']}")
    print()
    print("targets (neardup, Rule::default()):")
    print(f"  pairwise precision >= 0.99: {nd['precision']:.4f} -> {'MET' if nd['precision'] >= 0.99 else 'NOT MET'}")
    print(f"  recall >= 0.95:             {nd['recall']:.4f} -> {'MET' if nd['recall'] >= 0.95 else 'NOT MET'}")
    print(f"  F1 beats datasketch:        {nd['f1']:.4f} vs {ds['f1']:.4f} -> {'MET' if nd['f1'] > ds['f1'] else 'NOT MET'}")
    cli = [r for r in results["systems"] if r["name"].startswith("neardup dedup CLI")]
    for r in cli:
        print(f"  {r['name']}: P {r['precision']:.4f} R {r['recall']:.4f} F1 {r['f1']:.4f} -> "
              f"P {'MET' if r['precision'] >= 0.99 else 'NOT MET'}, R {'MET' if r['recall'] >= 0.95 else 'NOT MET'}, "
              f"F1 vs datasketch {'MET' if r['f1'] > ds['f1'] else 'NOT MET'}")


def read_truth(d):
    """The sample's pairs with J >= 0.8 (by document index in DIR/shingles.jsonl) and every
    labelled pair's J."""
    truth08, jmap = set(), {}
    with open(os.path.join(d, "truth.jsonl")) as f:
        for line in f:
            o = json.loads(line)
            k = (o["a"], o["b"])
            jmap[k] = o["j"]
            if o["j"] >= 0.8:
                truth08.add(k)
    return truth08, jmap


def full(args):
    from datasketch import MinHash, MinHashLSH
    with open(os.path.join(args.dir, "shingles.jsonl")) as f:
        ids = [json.loads(line)["id"] for line in f]
    truth08, jmap = read_truth(args.dir)
    sample = {x: i for i, x in enumerate(ids)}
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    uf = UnionFind(0)

    at_sample = {}
    t = time.perf_counter()
    nbytes = 0
    with open(args.corpus, "rb") as f:
        for i, line in enumerate(f):
            rec = json.loads(line)
            text = content_text(rec)
            nbytes += len(text.encode())
            m = MinHash(num_perm=128)
            m.update_batch([s.encode("utf-8") for s in set(shingles(text))])
            uf.p.append(i)
            for c in lsh.query(m):
                uf.union(c, i)
            lsh.insert(i, m)
            if rec.get("id") in sample:
                at_sample[sample[rec["id"]]] = i
            if i % 10000 == 0 and i:
                secs = time.perf_counter() - t
                print(f"  datasketch, whole corpus: {i} documents, {nbytes / 1e6:.0f} MB in "
                      f"{secs:.0f}s", flush=True)
    secs = time.perf_counter() - t
    missing = len(ids) - len(at_sample)
    if missing:
        sys.exit(f"{missing} sampled documents are not in {args.corpus}")
    groups = {}
    for s_index, c_index in at_sample.items():
        groups.setdefault(uf.find(c_index), []).append(s_index)
    edges = [(g[0], x) for g in groups.values() for x in g[1:]]
    row = score("datasketch MinHashLSH(0.8, 128 perm), whole corpus", len(ids), edges,
                truth08, jmap, secs)
    row["mb_per_s"] = nbytes / 1e6 / secs
    print(f"{row['name']}: {nbytes / 1e6:.0f} MB in {secs:.0f}s ({row['mb_per_s']:.2f} MB/s); "
          f"on the sample's pairs P {row['precision']:.4f} R {row['recall']:.4f} "
          f"F1 {row['f1']:.4f}", flush=True)
    # The truth: Jaccard once the boilerplate neardup's run learned is left out
    # (written by quality_eval eval --cli-out).
    path = os.path.join(args.dir, "truth_after_boilerplate.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            after = {(o["a"], o["b"]) for o in map(json.loads, f)}
        r = score(row["name"] + " (truth after neardup's boilerplate)", len(ids), edges,
                  after, jmap, secs)
        row["after_boilerplate"] = {k: r[k] for k in
                                    ("precision", "recall", "f1", "truth_pairs", "true_positives")}
        print(f"  against the truth after neardup's boilerplate ({len(after)} pairs): "
              f"P {r['precision']:.4f} R {r['recall']:.4f} F1 {r['f1']:.4f}", flush=True)
    json.dump(row, open(args.out, "w"), indent=1)


def throughput(args):
    from datasketch import MinHash, MinHashLSH
    out = {}
    lines = open(args.corpus, "rb").read().splitlines()

    def run(name, step):
        t = time.perf_counter()
        docs = nbytes = 0
        for line in lines:
            rec = json.loads(line)
            step(rec)
            docs += 1
            nbytes += len(content_text(rec).encode())
            if docs % 16 == 0 and time.perf_counter() - t > args.budget:
                break
        secs = time.perf_counter() - t
        out[name] = {"docs": docs, "bytes": nbytes, "seconds": secs,
                     "mb_per_s": nbytes / 1e6 / secs}
        print(f"{name}: {docs} docs, {nbytes / 1e6:.2f} MB in {secs:.1f}s = "
              f"{nbytes / 1e6 / secs:.3f} MB/s (one thread)", flush=True)

    lsh = MinHashLSH(threshold=0.8, num_perm=128)

    def ds_step(rec):
        m = MinHash(num_perm=128)
        m.update_batch([s.encode("utf-8") for s in set(shingles(content_text(rec)))])
        lsh.query(m)
        lsh.insert(rec["id"], m)

    run("datasketch", ds_step)
    seed = SeedPipeline()
    run("seed000", lambda rec: seed.add(rec["id"], rec))
    json.dump(out, open(args.out, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--dir", required=True)
    q.add_argument("--corpus", required=True)
    fl = sub.add_parser("full")
    fl.add_argument("--dir", required=True)
    fl.add_argument("--corpus", required=True)
    fl.add_argument("--out", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--corpus", required=True)
    t.add_argument("--budget", type=float, default=60)
    t.add_argument("--out", required=True)
    args = ap.parse_args()
    {"quality": quality, "full": full, "throughput": throughput}[args.cmd](args)


if __name__ == "__main__":
    main()
