#!/usr/bin/env python3
"""The Python package side by side with its Python peers and with the Rust core, one run.

Fingerprints, one thread, on the English documents `fingerprint_bench --dump-corpus` wrote
(JSON Lines, one JSON string a line): `neardup.fingerprint` over a pyarrow string array and
over a list; gaoya's SimHash (`par_bulk_doc2signatures`, one rayon thread), rensa's RMinHash
(128 permutations), datasketch's MinHash (128 permutations, `update_batch`) and the
`simhash` package, each on word 4-gram shingles of lowercase `\\w+` tokens as
scripts/bench_fingerprint/peers.py makes them (the slow ones on a prefix that fits a time
budget). The Rust core's per-core rate comes from fingerprint_bench's JSON (the library loop
`neardup fingerprint` runs).

Dedup, on a prefix of the dedup bench corpus (`{"id","url","body_text"}` records):
`neardup.Deduper().process(records)` (memory store, every core) against datasketch
MinHashLSH (threshold 0.8, 128 permutations, word 4-grams: a query, then an insert, per
record), MB/s of text. Writes JSON to --out and prints a table.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench_fingerprint"))
from peers import load, measure, prefix_for_budget, words4  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rust", required=True, help="fingerprint_bench's --json output")
    ap.add_argument("--dedup-corpus", default=None)
    ap.add_argument("--dedup-mb", type=float, default=8.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-secs", type=float, default=0.25)
    ap.add_argument("--budget", type=float, default=3.0)
    args = ap.parse_args()

    import numpy as np
    import pyarrow as pa
    import neardup

    docs = load(args.corpus)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    print(f"{len(docs)} documents, {nbytes / 1e6:.1f} MB", file=sys.stderr)
    rows, problems = [], []
    f1 = neardup.Fingerprinter(threads=1)
    arrow = pa.array(docs)

    def nd_arrow(ds):
        return int(np.bitwise_xor.reduce(f1.fingerprint(arrow)))

    def nd_list(ds):
        return int(np.bitwise_xor.reduce(f1.fingerprint(ds)))

    rows.append(measure("neardup-arrow", docs, nd_arrow, args.reps, args.min_secs,
                        f"neardup {neardup.__version__}: fingerprint(pyarrow array), threads=1"))
    rows.append(measure("neardup-list", docs, nd_list, args.reps, args.min_secs,
                        "fingerprint(list of str), threads=1"))

    def budgeted(name, one, note, reps=2):
        try:
            n = prefix_for_budget(docs, one, args.budget / (reps + 1))
            subset = docs[:n]

            def one_pass(ds):
                acc = 0
                for d in ds:
                    acc ^= hash(one(d))
                return acc

            rows.append(measure(name, subset, one_pass, reps, 0.0,
                                note + f"; first {n} of {len(docs)} documents"))
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name}: {type(e).__name__}: {e}")

    try:
        from gaoya.simhash import SimHashStringIndex
        native = SimHashStringIndex(hash_size=64, num_blocks=6, hamming_distance=5,
                                    analyzer="word", lowercase=True,
                                    ngram_range=(4, 4)).index

        def gaoya_batch(ds):
            acc = 0
            for s in native.par_bulk_doc2signatures(ds):
                acc ^= s
            return acc

        rows.append(measure("gaoya", docs, gaoya_batch, args.reps, args.min_secs,
                            "gaoya SimHash: par_bulk_doc2signatures, word 4-grams, one rayon thread"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"gaoya: {type(e).__name__}: {e}")

    try:
        from rensa import RMinHash

        def rensa_one(d):
            m = RMinHash(num_perm=128, seed=42)
            m.update(words4(d))
            return tuple(m.digest()[:2])

        budgeted("rensa", rensa_one, "rensa RMinHash, 128 permutations, word 4-grams")
    except Exception as e:  # noqa: BLE001
        problems.append(f"rensa: {type(e).__name__}: {e}")

    try:
        from datasketch import MinHash

        def ds_one(d):
            m = MinHash(num_perm=128)
            m.update_batch([s.encode("utf-8") for s in words4(d)])
            return int(m.hashvalues[0])

        budgeted("datasketch", ds_one, "datasketch MinHash, 128 permutations, update_batch")
    except Exception as e:  # noqa: BLE001
        problems.append(f"datasketch: {type(e).__name__}: {e}")

    try:
        import simhash

        budgeted("simhash", lambda d: simhash.Simhash(words4(d)).value,
                 "simhash package: Simhash(word 4-gram shingles)")
    except Exception as e:  # noqa: BLE001
        problems.append(f"simhash: {type(e).__name__}: {e}")

    with open(args.rust, encoding="utf-8") as f:
        rust = json.load(f)
    core = next((r for r in rust["rows"] if r.get("corpus") == "english"
                 and r.get("engine", "").startswith("neardup") and "default" in r.get("engine", "")),
                None)

    dedup = []
    if args.dedup_corpus and os.path.exists(args.dedup_corpus):
        records, size = [], 0
        with open(args.dedup_corpus, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                records.append(r)
                size += len(r.get("body_text", "").encode("utf-8"))
                if size >= args.dedup_mb * 1e6:
                    break
        t = time.perf_counter()
        with neardup.Deduper() as d:
            out = d.process(records)
        secs = time.perf_counter() - t
        merged = sum(1 for x in out.column("decision").to_pylist() if x == "merged")
        dedup.append({"engine": "neardup Deduper", "mb_s": size / 1e6 / secs, "merged": merged,
                      "records": len(records)})
        try:
            from datasketch import MinHash, MinHashLSH
            t = time.perf_counter()
            lsh = MinHashLSH(threshold=0.8, num_perm=128)
            merged = 0
            for i, r in enumerate(records):
                m = MinHash(num_perm=128)
                m.update_batch([s.encode("utf-8") for s in words4(r.get("body_text", ""))])
                if lsh.query(m):
                    merged += 1
                lsh.insert(str(i), m)
                if time.perf_counter() - t > args.budget * 20:
                    size = sum(len(x.get("body_text", "").encode("utf-8")) for x in records[:i + 1])
                    break
            secs = time.perf_counter() - t
            dedup.append({"engine": "datasketch MinHashLSH", "mb_s": size / 1e6 / secs,
                          "merged": merged, "records": i + 1})
        except Exception as e:  # noqa: BLE001
            problems.append(f"datasketch LSH: {type(e).__name__}: {e}")

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "core": core, "dedup": dedup, "problems": problems}, f, indent=2)

    by = {r["engine"]: r for r in rows}
    ours = by["neardup-arrow"]["cpu_mb_s"]
    print(f"\n{'engine':<16} {'MB/s (CPU)':>11} {'neardup-arrow is':>17}")
    for r in rows:
        print(f"{r['engine']:<16} {r['cpu_mb_s']:>11.1f} {ours / r['cpu_mb_s']:>16.1f}x")
    if core:
        print(f"Rust core (fingerprint_bench, {core['engine']}): {core.get('cpu_mb_s', core.get('mb_s')):.1f} MB/s;"
              f" Python over Arrow is {ours / core.get('cpu_mb_s', core.get('mb_s')):.2f} of it"
              f" (target >= 0.85)")
    peers = [r["cpu_mb_s"] for r in rows if not r["engine"].startswith("neardup")]
    if peers:
        print(f"fastest Python peer: {max(peers):.1f} MB/s; neardup is {ours / max(peers):.1f}x (target >= 4x)")
    for d in dedup:
        print(f"dedup: {d['engine']:<22} {d['mb_s']:8.2f} MB/s  ({d['records']} records, {d['merged']} merged)")
    if len(dedup) == 2:
        print(f"dedup: neardup is {dedup[0]['mb_s'] / dedup[1]['mb_s']:.1f}x datasketch")
    for p in problems:
        print(f"PROBLEM: {p}")


if __name__ == "__main__":
    main()
