#!/usr/bin/env python3
"""Joins the Rust figures (fingerprint_bench --json) and the Python peers (peers.py --out)
into one table of MB/s, docs/s and neardup's ratio to each peer, and checks the targets:

  neardup default profile >= 400 MB/s on one core (English prose, ASCII-heavy)
  >= 7x the seed-004 reference program
  >= 4x the fastest packaged peer (gaoya's SimHash)
  >= 50x the Python `simhash` package

Usage: report.py RUST_JSON PEERS_JSON
"""
import json
import sys

TARGET_MB_S = 400.0
TARGET_SEED = 7.0
TARGET_FASTEST_PEER = 4.0
TARGET_SIMHASH = 50.0


def verdict(ok):
    return "MET" if ok else "NOT MET"


def main():
    rust = json.load(open(sys.argv[1], encoding="utf-8"))
    peers = json.load(open(sys.argv[2], encoding="utf-8"))
    rrows = rust["rows"]
    prows = peers.get("rows", [])

    def find(engine, corpus="english"):
        for r in rrows + prows:
            if r["engine"] == engine and r["corpus"] == corpus:
                return r
        return None

    nd = find("neardup-default")
    if nd is None:
        sys.exit("no neardup-default/english row in the Rust results")

    def cpu(r):
        return r.get("cpu_mb_s") or float("nan")

    print("== English prose, one thread, 4-word shingles ==")
    print("wall: best repetition by the wall clock; cpu: bytes per second of this process's "
          "CPU time;\nx: neardup default profile's rate over the row's (wall, cpu); "
          "cpu/wall below 1: the core was shared")
    print(f"{'engine':<16} {'docs':>5} {'MB':>6} {'MB/s wall':>9} {'docs/s':>8} "
          f"{'MB/s cpu':>9} {'x wall':>8} {'x cpu':>8} {'cpu/wall':>8}  what")
    what = {
        "neardup-default": "neardup default profile (xxh3, tf)",
        "neardup-blake2b": "neardup blake2b profile (seed-000 compatible)",
        "seed004": "seed-004 reference simhash(text, 4, |_| 1), built in the harness",
    }
    english = [r for r in rrows if r["corpus"] == "english"] + prows
    for r in english:
        print(f"{r['engine']:<16} {r['docs']:>5} {r['bytes'] / 1e6:>6.2f} {r['mb_s']:>9.1f} "
              f"{r['docs_s']:>8.0f} {cpu(r):>9.1f} {nd['mb_s'] / r['mb_s']:>7.2f}x "
              f"{cpu(nd) / cpu(r):>7.2f}x {r.get('cpu_per_wall') or float('nan'):>8.2f}  "
              f"{what.get(r['engine'], r.get('note', ''))}")
    print(f"English corpus ASCII share: {100 * nd['ascii_share']:.1f}% of bytes")
    print("checksums: " + ", ".join(f"{r['engine']}={r['checksum']}" for r in english))

    print()
    print("== Targets (neardup default profile, English; judged on wall and on cpu figures) ==")
    results = []

    def target(label, wall_value, cpu_value, need, unit):
        ok_wall, ok_cpu = wall_value >= need, cpu_value >= need
        results.append(ok_wall and ok_cpu)
        print(f"  {label:<46} wall {wall_value:>8.2f}{unit} {verdict(ok_wall):<8}"
              f" cpu {cpu_value:>8.2f}{unit} {verdict(ok_cpu)}")

    target(f">= {TARGET_MB_S:.0f} MB/s per core", nd["mb_s"], cpu(nd), TARGET_MB_S, " MB/s")
    seed = find("seed004")
    if seed:
        target(f">= {TARGET_SEED:.0f}x seed-004 reference", nd["mb_s"] / seed["mb_s"],
               cpu(nd) / cpu(seed), TARGET_SEED, "x")
    if prows:
        fastest = max(prows, key=lambda r: r["mb_s"])
        fastest_cpu = max(prows, key=cpu)
        label = fastest["engine"] if fastest is fastest_cpu else \
            f"{fastest['engine']} / {fastest_cpu['engine']}"
        target(f">= {TARGET_FASTEST_PEER:.0f}x fastest packaged peer ({label})",
               nd["mb_s"] / fastest["mb_s"], cpu(nd) / cpu(fastest_cpu),
               TARGET_FASTEST_PEER, "x")
    else:
        print("  >= 4x fastest packaged peer: no peer ran: NOT MEASURED")
        results.append(False)
    sh = [r for r in prows if r["engine"].startswith("simhash")]
    for r in sh:
        target(f">= {TARGET_SIMHASH:.0f}x Python simhash ({r['engine']})",
               nd["mb_s"] / r["mb_s"], cpu(nd) / cpu(r), TARGET_SIMHASH, "x")
    if not sh:
        print("  >= 50x Python simhash: simhash did not run: NOT MEASURED")
        results.append(False)

    print()
    print("== Non-ASCII (man pages rendered with man -l), one thread ==")
    print(f"{'engine':<16} {'corpus':<8} {'docs':>5} {'MB':>6} {'ascii':>6} {'MB/s wall':>9} "
          f"{'docs/s':>8} {'MB/s cpu':>9} {'x seed004 wall/cpu':>19}")
    for r in rrows:
        if r["corpus"] == "english":
            continue
        s = find("seed004", r["corpus"])
        ratio = f"{r['mb_s'] / s['mb_s']:.2f}x/{cpu(r) / cpu(s):.2f}x" if s else "-"
        print(f"{r['engine']:<16} {r['corpus']:<8} {r['docs']:>5} {r['bytes'] / 1e6:>6.2f} "
              f"{100 * r['ascii_share']:>5.1f}% {r['mb_s']:>9.1f} {r['docs_s']:>8.0f} "
              f"{cpu(r):>9.1f} {ratio:>19}")

    problems = peers.get("problems", [])
    if problems:
        print()
        for p in problems:
            print(f"PROBLEM: {p}")
    print()
    print(f"overall: {sum(results)}/{len(results)} targets met on both wall and cpu figures")


if __name__ == "__main__":
    main()
