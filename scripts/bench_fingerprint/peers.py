#!/usr/bin/env python3
"""Fingerprint throughput of the packaged Python peers, one thread, on neardup's corpus.

Reads the English documents written by
`cargo run --release -p neardup --example fingerprint_bench -- --dump-corpus PATH`
(JSON Lines, one JSON string per line) and times, on this thread only:

  gaoya-loop      gaoya's SimHash (64-bit SipHash), lowercase, word 4-gram shingles:
                  `SimHashStringIndex(..., analyzer='word', lowercase=True,
                  ngram_range=(4, 4)).index.doc2signature(doc)` once per document. This is
                  the per-document signature that `insert_document` computes before it
                  touches the index; no index insertion is timed.
  gaoya-batch     the same signatures from one `par_bulk_doc2signatures(docs)` call, with
                  RAYON_NUM_THREADS=1 so rayon has a single worker (no Python call per doc).
  simhash-default `simhash.Simhash(text).value`: the package's default features
                  (lowercased, non-word characters dropped, character 4-grams, md5).
  simhash-words4  `simhash.Simhash(features).value` with word 4-gram shingles (lowercase
                  `\\w+` tokens joined by a space, repeats kept: term frequency); tokenising
                  and shingling are inside the timed region.

Each wall-clock figure is the best of several repetitions, each CPU-time figure the mean over
them; the slow `simhash` peers run on a prefix of the documents that fits a time budget and
report its rate. Writes JSON to --out.
"""
import os

# One thread for every native pool, before numpy or gaoya is imported.
for _var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import re
import sys
import time


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def measure(name, docs, one_pass, reps, min_secs, note):
    """Best of `reps` repetitions by the wall clock; each repetition runs enough passes to
    fill `min_secs`. The CPU figures divide by the process CPU time over all repetitions
    (every thread, so a rayon worker counts too)."""
    t = time.perf_counter()
    checksum = one_pass(docs)
    first = max(time.perf_counter() - t, 1e-6)
    passes = max(1, int(min_secs / first + 0.999))
    best = first
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(passes):
            c = one_pass(docs)
            assert c == checksum, f"{name}: signatures changed between passes"
        best = min(best, (time.perf_counter() - t) / passes)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    cpu_per_pass = cpu / (reps * passes) if reps else first
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    return {
        "engine": name,
        "corpus": "english",
        "docs": len(docs),
        "bytes": nbytes,
        "passes": passes,
        "best_secs_per_pass": best,
        "mb_s": nbytes / 1e6 / best,
        "docs_s": len(docs) / best,
        "cpu_secs_per_pass": cpu_per_pass,
        "cpu_mb_s": nbytes / 1e6 / cpu_per_pass,
        "cpu_docs_s": len(docs) / cpu_per_pass,
        # CPU seconds per wall second: about 1.0 for one thread on an idle core, below 1
        # when other work shared the core, above 1 if more than one thread ran.
        "cpu_per_wall": cpu / wall if wall > 0 else 0.0,
        "checksum": f"{checksum & (2**64 - 1):016x}",
        "note": note,
    }


def prefix_for_budget(docs, one_doc, budget):
    """How many leading documents `one_doc` gets through in about `budget` seconds."""
    t = time.perf_counter()
    n = 0
    while n < len(docs) and time.perf_counter() - t < budget:
        one_doc(docs[n])
        n += 1
    return max(n, 1)


WORD = re.compile(r"\w+")


def words4(text):
    """Word 4-gram shingles of lowercase `\\w+` tokens, repeats kept (term frequency).

    A list, not a Counter: simhash 2.1.2 multiplies a uint8 bit array by the weight when a
    weight exceeds 50, which overflows under numpy 2 for weights above 255.
    """
    toks = WORD.findall(text.lower())
    if len(toks) < 4:
        return [" ".join(toks)] if toks else []
    return [" ".join(toks[i:i + 4]) for i in range(len(toks) - 3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-secs", type=float, default=0.25)
    ap.add_argument("--simhash-budget", type=float, default=4.0,
                    help="seconds of documents for each `simhash` peer (a prefix of the corpus)")
    ap.add_argument("--simhash-reps", type=int, default=2)
    args = ap.parse_args()

    docs = load(args.corpus)
    rows, problems = [], []
    print(f"peers: {len(docs)} documents, "
          f"{sum(len(d.encode('utf-8')) for d in docs)} bytes", file=sys.stderr)

    try:
        import gaoya
        from gaoya.simhash import SimHashStringIndex
        version = getattr(gaoya, "__version__", "?")
        try:
            from importlib.metadata import version as dist_version
            version = dist_version("gaoya")
        except Exception:
            pass
        index = SimHashStringIndex(hash_size=64, num_blocks=6, hamming_distance=5,
                                   analyzer="word", lowercase=True, ngram_range=(4, 4))
        native = index.index
        sig = native.doc2signature

        def gaoya_loop(ds):
            acc = 0
            for d in ds:
                acc ^= sig(d)
            return acc

        def gaoya_batch(ds):
            acc = 0
            for s in native.par_bulk_doc2signatures(ds):
                acc ^= s
            return acc

        print("timing gaoya", file=sys.stderr)
        rows.append(measure("gaoya-loop", docs, gaoya_loop, args.reps, args.min_secs,
                            f"gaoya {version}: doc2signature per doc, word 4-grams, lowercase"))
        rows.append(measure("gaoya-batch", docs, gaoya_batch, args.reps, args.min_secs,
                            f"gaoya {version}: par_bulk_doc2signatures, RAYON_NUM_THREADS=1"))
    except Exception as e:  # noqa: BLE001 - report any failure and go on
        problems.append(f"gaoya unavailable: {type(e).__name__}: {e}")

    try:
        import simhash
        from importlib.metadata import version as dist_version
        sh_version = dist_version("simhash")
    except Exception as e:  # noqa: BLE001
        simhash = None
        problems.append(f"simhash unavailable: {type(e).__name__}: {e}")

    if simhash is not None:
        def default_one(d):
            return simhash.Simhash(d).value

        def words_one(d):
            return simhash.Simhash(words4(d)).value

        for name, one, note in (
            ("simhash-default", default_one,
             f"simhash {sh_version}: Simhash(text), default char 4-gram features"),
            ("simhash-words4", words_one,
             f"simhash {sh_version}: Simhash(list of word 4-gram shingles, repeats kept)"),
        ):
            print(f"timing {name}", file=sys.stderr)
            try:
                n = prefix_for_budget(docs, one,
                                      args.simhash_budget / (args.simhash_reps + 1))
                subset = docs[:n]

                def one_pass(ds, one=one):
                    acc = 0
                    for d in ds:
                        acc ^= one(d)
                    return acc

                rows.append(measure(name, subset, one_pass, args.simhash_reps, 0.0,
                                    note + f"; first {n} of {len(docs)} documents"))
            except Exception as e:  # noqa: BLE001
                problems.append(f"{name} failed: {type(e).__name__}: {e}")

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "problems": problems,
                   "python": sys.version.split()[0]}, f, indent=2)
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)


if __name__ == "__main__":
    main()
