#!/usr/bin/env python3
"""Combines the throughput bench's outputs into one table (scripts/bench_dedup.sh)."""
import json
import os
import re
import sys

out = sys.argv[1]
corpus = sys.argv[2]
target = float(os.environ.get("TARGET_MBPS", "150"))

rep = json.load(open(os.path.join(out, "run", "report.json")))
tv = open(os.path.join(out, "time.txt")).read()


def grab(pattern, conv=float):
    m = re.search(pattern, tv)
    return conv(m.group(1)) if m else None


wall_txt = grab(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", str)
parts = [float(x) for x in wall_txt.split(":")]
wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss_kb = grab(r"Maximum resident set size \(kbytes\): (\d+)", int)
user = grab(r"User time \(seconds\): (\S+)")
system = grab(r"System time \(seconds\): (\S+)")
cpu = grab(r"Percent of CPU this job got: (\d+)%", int)
file_bytes = os.path.getsize(corpus)
text_mb = rep["throughput_mb_per_s"] * rep["timings_seconds"]["total"]
nd_mbps = text_mb / wall
peers = json.load(open(os.path.join(out, "peers_throughput.json")))

quality = {}
try:
    res = json.load(open(os.path.join(out, "sample", "results.json")))
    pj = json.load(open(os.path.join(out, "sample", "peers.json")))
    for r in res["systems"] + pj["systems"]:
        quality[r["name"]] = r
    sample_note = (f"labelled sample: {res['documents']} documents ({res['bytes'] / 1e6:.1f} MB, whole "
                   f"families of the corpus), {res['pairs']} pairs by brute force, "
                   f"{res['truth_pairs']} with J >= 0.8")
except FileNotFoundError:
    res, sample_note = None, "labelled sample: not run"


def q(name):
    r = quality.get(name)
    if not r:
        return "      -       -       -"
    return f"{r['precision']:>7.4f} {r['recall']:>7.4f} {r['f1']:>7.4f}"


cli_name = next((n for n in quality if n.startswith("neardup dedup CLI")), None)
print(f"End-to-end throughput: {corpus} ({file_bytes / 1e9:.3f} GB file, {text_mb / 1e3:.3f} GB of text, "
      f"{rep['input_records']} records)")
walls_path = os.path.join(out, "walls.txt")
if os.path.exists(walls_path):
    print(f"neardup dedup runs, wall seconds: {open(walls_path).read().strip()} (the median run below)")
print(f"neardup dedup: wall {wall:.1f}s (boilerplate pass {rep['timings_seconds']['boilerplate']}s, "
      f"dedup {rep['timings_seconds']['dedup']}s), user {user}s, sys {system}s, CPU {cpu}%, "
      f"peak RSS {rss_kb / 1024:.0f} MiB; kept {rep['kept']}, merged {rep['merged']} "
      f"({rep['decisions']['exact']} exact, {rep['decisions']['near']} near), largest group "
      f"{rep['largest_group']['size']}, index {rep['index']['layout']} {rep['index']['memory_bytes'] / 2**20:.0f} MiB")
print(sample_note)
print()
hdr = (f"{'system':<40} {'threads':>7} {'MB':>9} {'seconds':>8} {'MB/s':>8} {'neardup x':>9} "
       f"{'P':>7} {'R':>7} {'F1':>7}")
print(hdr)
print("-" * len(hdr))
print(f"{'neardup dedup (store on, defaults)':<40} {2:>7} {text_mb:>9.1f} {wall:>8.1f} {nd_mbps:>8.1f} "
      f"{'1.0':>9} {q(cli_name) if cli_name else q('neardup library, Rule::default()')}")
names = {"datasketch": "datasketch MinHashLSH(0.8, 128 perm)",
         "seed000": "seed 000 reference (k=3, J>=0.82)"}
for key, label in names.items():
    p = peers[key]
    print(f"{label:<40} {1:>7} {p['bytes'] / 1e6:>9.2f} {p['seconds']:>8.1f} {p['mb_per_s']:>8.3f} "
          f"{nd_mbps / p['mb_per_s']:>9.0f} {q(label)}")
print()
print("(neardup's P/R/F1: its clusters from the full 1 GB run restricted to the labelled sample's "
      "pairs; the peers ran on the labelled sample alone; throughput of the peers is measured "
      "on the same sample file, one thread each, end to end from JSONL)")
after_bp = next((n for n in quality if n.endswith("(truth after its boilerplate)")), None)
if after_bp:
    r = quality[after_bp]
    print(f"neardup dedup with the issue's truth (Jaccard after its boilerplate removal, "
          f"{r['truth_pairs']} pairs): {q(after_bp)}")
full_path = os.path.join(out, "peers_full.json")
if os.path.exists(full_path):
    r = json.load(open(full_path))
    print(f"datasketch over the whole corpus as neardup's run (PEERS_FULL=1; {r['mb_per_s']:.2f} MB/s, "
          f"{r['seconds']:.0f}s), its clusters on the same pairs:  {r['precision']:>7.4f} "
          f"{r['recall']:>7.4f} {r['f1']:>7.4f}")
    a = r.get("after_boilerplate")
    if a:
        print(f"  the same with the issue's truth ({a['truth_pairs']} pairs):  {a['precision']:>7.4f} "
              f"{a['recall']:>7.4f} {a['f1']:>7.4f}")
if "neardup library, Rule::default()" in quality:
    print(f"neardup library Deduper on the sample alone: {q('neardup library, Rule::default()')}")
print()
print(f"target >= {target:.0f} MB/s on 2 cores with the store on: {nd_mbps:.1f} MB/s -> "
      f"{'MET' if nd_mbps >= target else 'NOT MET'}")
