"""Times the Python `simhash` package's SimhashIndex on the same fingerprints as the Rust bench.

Usage: python simhash_index.py FPS_FILE K QUERIES
Prints one line `python-simhash build_s=.. qps=..` for bench_index.sh to parse.
"""
import logging
import sys
import time

from simhash import Simhash, SimhashIndex

MASK = (1 << 64) - 1


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def main():
    path, k, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on big buckets
    with open(path) as f:
        fps = [int(line, 16) for line in f if line.strip()]
    start = time.perf_counter()
    index = SimhashIndex([(str(i), Simhash(fp)) for i, fp in enumerate(fps)], k=k)
    build = time.perf_counter() - start

    # Same recipe as the Rust bench: half near (<= k flips of a stored fp), half random.
    state, queries = 0xC0FFEE, []
    for i in range(count):
        if i % 2 == 0:
            state, r = splitmix(state)
            source = r % len(fps)
            state, r = splitmix(state)
            flips = r % (k + 1)
            mask = 0
            while bin(mask).count("1") < flips:
                state, r = splitmix(state)
                mask |= 1 << (r % 64)
            queries.append((fps[source] ^ mask, str(source)))
        else:
            state, r = splitmix(state)
            queries.append((r, None))
    query_hashes = [(Simhash(q), source) for q, source in queries]
    start = time.perf_counter()
    for q, source in query_hashes:
        found = index.get_near_dups(q)
        if source is not None and source not in found:
            raise SystemExit(f"near query lost its source {source}")
    elapsed = time.perf_counter() - start
    print(f"python-simhash n={len(fps)} k={k} build_s={build:.2f} qps={count / elapsed:.0f}")


if __name__ == "__main__":
    main()
