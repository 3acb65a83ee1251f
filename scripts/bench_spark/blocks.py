#!/usr/bin/env python3
"""The Spark job's two verification rounds in Rust alone, outside Spark, on the bench's
corpus: `neardup.block_participants` over every narrow block row, then `neardup.block_pairs`
over the rows it names (with their sets). Prints one JSON line per run; run it with two
wheels installed in turn to compare them on one machine at one time.

    blocks.py [CORPUS.jsonl (bench-out/spark/corpus.jsonl)] [K (16)] [RUNS (3)]
"""
import json
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc

import neardup


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench-out/spark/corpus.jsonl"
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    t = 0.8
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    batches = []
    for i in range(0, len(lines), 4096):
        b = pa.RecordBatch.from_arrays([pa.array(lines[i : i + 4096])], names=["value"])
        a = neardup.analyze_batch(b, json="value", now_ms=0)
        batches.append(a.filter(pc.is_null(a.column("reason"))))
    ok = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    columns = {c: ok.column(c) for c in ("doc", "fp", "fp_hi")}
    records = pa.RecordBatch.from_pydict({**columns, "set": ok.column("set")})
    size = pc.cast(pc.divide(pc.binary_length(ok.column("set")), 4), pa.int32())
    narrow = neardup.pigeonhole_blocks(pa.RecordBatch.from_pydict({**columns, "size": size}), bits=64, k=k)
    every = neardup.pigeonhole_blocks(records, bits=64, k=k)
    key = lambda rows: zip(*(rows.column(c).to_pylist() for c in ("block", "value", "doc")))
    for _ in range(runs):
        started = time.perf_counter()
        needed = neardup.block_participants(narrow, bits=64, k=k, min_jaccard=t)
        participants = time.perf_counter() - started
        keys = set(key(needed))
        wide = every.filter(pa.array([x in keys for x in key(every)]))
        started = time.perf_counter()
        pairs = neardup.block_pairs(wide, bits=64, k=k, min_jaccard=t)
        verification = time.perf_counter() - started
        print(json.dumps({
            "participants_s": round(participants, 3),
            "verification_s": round(verification, 3),
            "block_rows": narrow.num_rows,
            "needed_rows": wide.num_rows,
            "pairs": pairs.num_rows,
            "candidates": int(needed.schema.metadata[b"candidates"]),
        }))


if __name__ == "__main__":
    main()
