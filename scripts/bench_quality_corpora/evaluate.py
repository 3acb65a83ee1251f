#!/usr/bin/env python3
"""Systems, scores and tables of scripts/bench_quality_corpora.sh (its header has the metric).

    evaluate.py run --root DIR --corpora a,b,... --neardup BIN --grid small|full
                    [--jobs 2] [--out DIR/results.json]
    evaluate.py datasketch --dir DIR        (one corpus; a job of `run`)

`run` runs, 2 at a time at most, for every corpus DIR/<name>/ (corpus.jsonl, meta.jsonl,
shingles.jsonl/.bin and truth.jsonl made by build.py and corpus_truth): datasketch
MinHashLSH, `neardup dedup` at its defaults and `neardup dedup` at every setting of the
grid (each with a fresh store, deleted afterwards); then scores every run against the truth,
chooses the default by the worst corpus and leave-one-corpus-out, prints Markdown tables
and writes results.json.
"""

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# ----------------------------------------------------------------------------------------
# Inputs.


def load_meta(d):
    with open(os.path.join(d, "meta.jsonl")) as f:
        return [json.loads(x) for x in f]


def load_truth(d):
    """[(a, b, j)] for every pair with J >= 0.5, record indices in corpus order."""
    out = []
    with open(os.path.join(d, "truth.jsonl")) as f:
        for line in f:
            o = json.loads(line)
            out.append((o["a"], o["b"], o["j"]))
    return out


def load_sets(d):
    """Record i's shingle set as a list of 8-byte little-endian values (bytes)."""
    with open(os.path.join(d, "shingles.jsonl")) as f:
        rows = [json.loads(x) for x in f]
    raw = open(os.path.join(d, "shingles.bin"), "rb").read()
    sets, off = [], 0
    for r in rows:
        n = r["n"]
        sets.append([raw[off + 8 * k: off + 8 * k + 8] for k in range(n)])
        off += 8 * n
    return [r["id"] for r in rows], [r["tokens"] for r in rows], sets


# ----------------------------------------------------------------------------------------
# Pair kinds (recall per kind) and the pairs recall leaves out.


def pair_kind(corpus, a, b, alike=frozenset()):
    """The kind of a pair of records (their meta), or None for a pair recall leaves out:
    two different base documents on one host of the chrome corpus, alike only through the
    host's template (`alike`: the pairs of base documents whose own texts, without any
    chrome, have J >= 0.5; those are not template pairs)."""
    if corpus == "recrawl":
        if a["base"] == b["base"]:
            return ("same page, next release" if abs(a["release"] - b["release"]) == 1
                    else "same page, two releases apart")
        return ("another page, same release" if a["release"] == b["release"]
                else "another path, another release")
    if corpus == "templates":
        if a.get("group") == b.get("group"):
            return ("gcloud: same command, another track" if a["group"].startswith("gcloud")
                    else "Debian: same source package")
        return ("gcloud: different commands" if a["group"].startswith("gcloud")
                else "Debian: different sources")
    if a["base"] != b["base"]:
        if corpus == "chrome":
            if (a["base"], b["base"]) in alike or (b["base"], a["base"]) in alike:
                return "different articles, alike text"
            return None if a.get("host") == b.get("host") else "different articles, two hosts"
        return "different documents"
    if a["kind"] == "original" or b["kind"] == "original":
        return b["kind"] if a["kind"] == "original" else a["kind"]
    return "variant ~ variant"


# ----------------------------------------------------------------------------------------
# Scoring.


def clusters_to_labels(n, index, clusters):
    """clusters: lists of ids (or indices); label per record, -1 for none."""
    lab = [-1] * n
    sizes = []
    for c in clusters:
        members = [index[m] if isinstance(m, str) else m for m in c]
        members = [m for m in members if m is not None]
        if len(members) < 2:
            continue
        cid = len(sizes)
        sizes.append(len(members))
        for m in members:
            lab[m] = cid
    return lab, sizes


def jaccard(sa, sb):
    a, b = set(sa), set(sb)
    return len(a & b) / len(a | b) if a or b else 1.0


class Corpus:
    def __init__(self, root, name):
        self.name = name
        self.dir = os.path.join(root, name)
        self.meta = load_meta(self.dir)
        self.ids, self.tokens, self.sets = load_sets(self.dir)
        if [m["id"] for m in self.meta] != self.ids:
            raise SystemExit(f"{name}: meta.jsonl and shingles.jsonl disagree")
        self.index = {x: i for i, x in enumerate(self.ids)}
        self.n = len(self.ids)
        self.truth = load_truth(self.dir)
        self.jmap = {(a, b): j for a, b, j in self.truth}
        alike = set()
        art = os.path.join(self.dir, "articles")
        if os.path.exists(os.path.join(art, "truth.jsonl")):
            with open(os.path.join(art, "shingles.jsonl")) as f:
                bases = [json.loads(x)["id"] for x in f]
            alike = {(bases[a], bases[b]) for a, b, _ in load_truth(art)}
        self.kinds = [pair_kind(name, self.meta[a], self.meta[b], alike)
                      for a, b, _ in self.truth]
        self.positives = sum(1 for (_, _, j), k in zip(self.truth, self.kinds)
                             if j >= 0.8 and k is not None)
        self.excluded = sum(1 for (_, _, j), k in zip(self.truth, self.kinds)
                            if j >= 0.8 and k is None)
        self.ambiguous = sum(1 for (_, _, j), k in zip(self.truth, self.kinds)
                             if 0.5 <= j < 0.8 and k is not None)
        partners = set()
        for (a, b, j), k in zip(self.truth, self.kinds):
            if j >= 0.8 and k is not None:
                partners.update((a, b))
        self.docs_with_partner = len(partners)
        self.bytes = os.path.getsize(os.path.join(self.dir, "corpus.jsonl"))

    def j(self, a, b):
        a, b = min(a, b), max(a, b)
        return self.jmap.get((a, b)) or jaccard(self.sets[a], self.sets[b])

    def score(self, clusters, examples=False):
        lab, sizes = clusters_to_labels(self.n, self.index, clusters)
        predicted = sum(s * (s - 1) // 2 for s in sizes)
        tp = ignored = template_merged = 0
        by_kind = {}
        recalled_docs = set()
        partners = set()
        same_tp = same_ign = 0
        missed = []
        for (a, b, j), k in zip(self.truth, self.kinds):
            co = lab[a] != -1 and lab[a] == lab[b]
            if k is None:
                template_merged += co
                continue
            same = self.meta[a]["base"] == self.meta[b]["base"]
            if j >= 0.8:
                t = by_kind.setdefault(k, [0, 0])
                t[1] += 1
                partners.update((a, b))
                if co:
                    tp += 1
                    t[0] += 1
                    recalled_docs.update((a, b))
                    same_tp += same
                elif len(missed) < 200:
                    missed.append((a, b, j, k))
            elif co:
                ignored += 1
                same_ign += same
        # Pairs of one base document inside clusters, for the false positives' split.
        same_pred = 0
        groups = {}
        for i, c in enumerate(lab):
            if c != -1:
                key = (c, self.meta[i]["base"])
                groups[key] = groups.get(key, 0) + 1
        same_pred = sum(v * (v - 1) // 2 for v in groups.values())
        fp = predicted - tp - ignored
        fp_same = same_pred - same_tp - same_ign
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / self.positives if self.positives else 1.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        row = {"precision": p, "recall": r, "f1": f1, "predicted_pairs": predicted,
               "true_positives": tp, "false_positives": fp, "ignored_pairs": ignored,
               "false_positives_same_base": fp_same, "false_positives_other_base": fp - fp_same,
               "template_pairs_merged": template_merged,
               "doc_recall": len(recalled_docs) / len(partners) if partners else 1.0,
               "recall_by_kind": {k: {"recall": v[0] / v[1], "pairs": v[1]}
                                  for k, v in sorted(by_kind.items())},
               "clusters": len(sizes), "largest_cluster": max(sizes, default=0)}
        if examples:
            row["examples"] = self.examples(lab, sizes, missed)
        return row

    def examples(self, lab, sizes, missed):
        """A few false pairs (lowest J in the largest clusters) and missed pairs."""
        members = {}
        for i, c in enumerate(lab):
            if c != -1:
                members.setdefault(c, []).append(i)
        order = sorted(members, key=lambda c: -sizes[c])[:20]
        false = []
        for c in order:
            m = members[c][:40]
            worst = None
            for x, y in itertools.combinations(m, 2):
                j = self.j(x, y)
                if j < 0.5 and (worst is None or j < worst[2]):
                    worst = (x, y, j)
            if worst:
                x, y, j = worst
                false.append({"a": self.ids[x], "b": self.ids[y], "j": round(j, 3),
                              "words": [self.tokens[x], self.tokens[y]],
                              "cluster_size": sizes[c]})
            if len(false) >= 3:
                break
        miss = [{"a": self.ids[a], "b": self.ids[b], "j": round(j, 3), "kind": k,
                 "words": [self.tokens[a], self.tokens[b]]} for a, b, j, k in missed[:3]]
        return {"false_pairs": false, "missed_pairs": miss}


# ----------------------------------------------------------------------------------------
# Systems.


def datasketch_job(d):
    """MinHashLSH(threshold 0.8, 128 permutations) over the truth's own shingle sets (each
    u64 as 8 little-endian bytes, as scripts/bench_quality/peers.py does); every LSH
    candidate is an edge; clusters are connected components. Writes d/datasketch.json."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "bench_quality"))
    from peers import UnionFind
    from datasketch import MinHash, MinHashLSH
    import datasketch
    ids, _, sets = load_sets(d)
    t = time.perf_counter()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    uf = UnionFind(len(ids))
    for i, s in enumerate(sets):
        if not s:
            continue
        m = MinHash(num_perm=128)
        m.update_batch(s)
        for c in lsh.query(m):
            uf.union(c, i)
        lsh.insert(i, m)
    groups = {}
    for i in range(len(ids)):
        groups.setdefault(uf.find(i), []).append(i)
    clusters = [g for g in groups.values() if len(g) >= 2]
    secs = time.perf_counter() - t
    json.dump({"clusters": clusters, "seconds": secs, "version": datasketch.__version__},
              open(os.path.join(d, "datasketch.json"), "w"))


def neardup_flags(setting, has_linkage, has_boilerplate=False):
    k, j, link, short, bp, mw = setting
    flags = ["--max-distance", str(k), "--min-jaccard", str(j), "--short-text", short]
    if mw is not None:
        flags += ["--min-words", str(mw)]
    if has_linkage:
        flags += ["--linkage", link]
    elif link == "single":
        flags += ["--min-cluster-jaccard", "0", "--cluster-quorum", "0"]
    # Boilerplate learning is opt-in (`--boilerplate`) since the defaults chosen here; a
    # binary from before that learns it unless told `--no-boilerplate`.
    if bp == "on" and has_boilerplate:
        flags.append("--boilerplate")
    elif bp == "off" and not has_boilerplate:
        flags.append("--no-boilerplate")
    return flags



def setting_name(setting):
    k, j, link, short, bp, mw = setting
    return f"k={k} J={j} {link} short={short} bp={bp}" + ("" if mw is None else f" mw={mw}")


def run_neardup(binary, corpus_dir, run_dir, flags):
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    store = os.path.join(run_dir, "store.db")
    cmd = [binary, "dedup", "--jsonl", os.path.join(corpus_dir, "corpus.jsonl"),
           "--out", os.path.join(run_dir, "out"), "--store", store, "--quiet"] + flags
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.perf_counter() - t
    for f in os.listdir(run_dir):
        if f.startswith("store.db"):
            os.remove(os.path.join(run_dir, f))
    if p.returncode not in (0, 2):
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    clusters = []
    with open(os.path.join(run_dir, "out", "clusters.jsonl")) as f:
        for line in f:
            m = json.loads(line)["members"]
            if len(m) >= 2:
                clusters.append(m)
    report = json.load(open(os.path.join(run_dir, "out", "report.json")))
    for f in ("kept.jsonl", "merges.jsonl"):
        try:
            os.remove(os.path.join(run_dir, "out", f))
        except FileNotFoundError:
            pass
    json.dump({"cmd": cmd[1:], "clusters": clusters, "seconds": secs,
               "report": {k: report.get(k) for k in ("decisions", "largest_group", "rule",
                                                     "boilerplate_hosts", "rejected")}},
              open(os.path.join(run_dir, "run.json"), "w"))


GRIDS = {
    "full": {"k": [12, 14, 16], "j": [0.75, 0.8], "link": ["single", "guarded"],
             "short": ["chars", "exact"], "bp": ["on", "off"]},
    "small": {"k": [14], "j": [0.8], "link": ["single", "guarded"],
              "short": ["chars", "exact"], "bp": ["on", "off"]},
}


def fmt(x, nd=3):
    return f"{x:.{nd}f}"


def rank_key(row, corpora, setting=None):
    # Ties on the worst corpus go to the stricter verification threshold before the mean:
    # a Jaccard threshold under the truth's own 0.8 gains only pairs the metric ignores
    # (0.5-0.8), and single linkage chains through them.
    j = setting[1] if setting is not None else 0.0
    return (round(min(row[c]["f1"] for c in corpora), 9),
            round(min(row[c]["precision"] for c in corpora), 9),
            j,
            round(sum(row[c]["f1"] for c in corpora) / len(corpora), 9))


def pick(settings, scores, corpora):
    """The setting whose worst F1 over `corpora` is best; ties: higher worst precision,
    then the higher Jaccard threshold, then higher mean F1, then the grid order."""
    best, key = None, None
    for s in settings:
        k = rank_key(scores[s], corpora, s)
        if key is None or k > key:
            best, key = s, k
    return best, key


def run(args):
    t0 = time.time()
    names = [c for c in args.corpora.split(",") if c]
    grid = GRIDS[args.grid]
    min_words = [int(x) for x in args.min_words.split(",") if x.strip()] or [None]
    settings = list(itertools.product(grid["k"], grid["j"], grid["link"], grid["short"],
                                      grid["bp"], min_words))
    help_text = subprocess.run([args.neardup, "dedup", "--help"], capture_output=True,
                               text=True).stdout
    has_linkage = "--linkage" in help_text
    has_boilerplate = "--boilerplate " in help_text or "--boilerplate\n" in help_text
    print(f"neardup dedup --help {'lists' if has_linkage else 'does not list'} --linkage: "
          f"single = {'--linkage single' if has_linkage else '--min-cluster-jaccard 0 --cluster-quorum 0'}, "
          f"guarded = {'--linkage guarded' if has_linkage else 'the defaults'}", flush=True)

    jobs = []
    for c in names:
        d = os.path.join(args.root, c)
        jobs.append(("datasketch", c, None))
        jobs.append(("neardup", c, None))
        for s in settings:
            jobs.append(("neardup", c, s))

    def do(job):
        kind, c, s = job
        d = os.path.join(args.root, c)
        if kind == "datasketch":
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "datasketch",
                                "--dir", d], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONHASHSEED="0"))
            if p.returncode:
                raise RuntimeError(f"datasketch on {c}: {p.stderr[-2000:]}")
            return
        run_dir = os.path.join(d, "runs", "defaults" if s is None else
                               setting_name(s).replace(" ", "_").replace("=", ""))
        # NEARDUP_FLAGS: extra flags for the "defaults" runs, to score any setting as the
        # per-corpus table does (e.g. NEARDUP_FLAGS="--linkage guarded").
        extra = os.environ.get("NEARDUP_FLAGS", "").split()
        run_neardup(args.neardup, d, run_dir,
                    extra if s is None else neardup_flags(s, has_linkage, has_boilerplate))

    # datasketch (the longest jobs) first.
    with ThreadPoolExecutor(args.jobs) as ex:
        list(ex.map(do, jobs))
    t_runs = time.time() - t0
    print(f"{len(jobs)} runs ({len(settings)} grid settings x {len(names)} corpora, "
          f"defaults and datasketch) in {t_runs:.0f}s, 2 at a time", flush=True)

    corpora = {c: Corpus(args.root, c) for c in names}
    res = {"grid": args.grid, "has_linkage_flag": has_linkage, "corpora": {},
           "settings": [setting_name(s) for s in settings]}
    scores = {}
    for c, corpus in corpora.items():
        ds = json.load(open(os.path.join(corpus.dir, "datasketch.json")))
        ds_row = corpus.score(ds["clusters"], examples=True)
        ds_row["seconds"] = ds["seconds"]
        nd = json.load(open(os.path.join(corpus.dir, "runs", "defaults", "run.json")))
        nd_row = corpus.score(nd["clusters"], examples=True)
        nd_row["seconds"] = nd["seconds"]
        nd_row["report"] = nd["report"]
        kinds = {}
        for m in corpus.meta:
            kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
        res["corpora"][c] = {
            "records": corpus.n, "bytes": corpus.bytes, "record_kinds": kinds,
            "truth_pairs": corpus.positives, "ambiguous_pairs": corpus.ambiguous,
            "template_pairs_left_out": corpus.excluded,
            "records_with_partner": corpus.docs_with_partner,
            "datasketch": ds_row, "neardup_defaults": nd_row, "grid": {}}
        for s in settings:
            name = setting_name(s)
            r = json.load(open(os.path.join(corpus.dir, "runs", name.replace(" ", "_")
                                            .replace("=", ""), "run.json")))
            row = corpus.score(r["clusters"])
            row["seconds"] = r["seconds"]
            row["flags"] = r["cmd"][8:]
            scores.setdefault(s, {})[c] = row
            res["corpora"][c]["grid"][name] = row

    # --- Tables.
    print()
    print(f"### Per corpus: neardup at its defaults beside datasketch MinHashLSH "
          f"(0.8, 128 perms) + connected components")
    print()
    print("| corpus | records | truth pairs (J>=0.8) | neardup P | R | F1 | doc R | largest | "
          "datasketch P | R | F1 | doc R | largest |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in names:
        r = res["corpora"][c]
        a, b = r["neardup_defaults"], r["datasketch"]
        print(f"| {c} | {r['records']} | {r['truth_pairs']} | {fmt(a['precision'])} | "
              f"{fmt(a['recall'])} | {fmt(a['f1'])} | {fmt(a['doc_recall'])} | "
              f"{a['largest_cluster']} | {fmt(b['precision'])} | {fmt(b['recall'])} | "
              f"{fmt(b['f1'])} | {fmt(b['doc_recall'])} | {b['largest_cluster']} |")
    print()
    print("Recall by kind (neardup defaults / datasketch; pairs):")
    for c in names:
        r = res["corpora"][c]
        a, b = r["neardup_defaults"]["recall_by_kind"], r["datasketch"]["recall_by_kind"]
        parts = [f"{k} {fmt(a[k]['recall'])}/{fmt(b[k]['recall'])} ({a[k]['pairs']})"
                 for k in a]
        print(f"- {c}: " + "; ".join(parts))
    print()
    print("False positives (pairs with J < 0.5 in one cluster, or template pairs), "
          "neardup defaults / datasketch: same base document + other base document; "
          "template pairs merged:")
    for c in names:
        r = res["corpora"][c]
        a, b = r["neardup_defaults"], r["datasketch"]
        line = (f"- {c}: {a['false_positives_same_base']}+{a['false_positives_other_base']}"
                f" / {b['false_positives_same_base']}+{b['false_positives_other_base']}")
        if c == "chrome":
            line += (f"; template pairs merged {a['template_pairs_merged']} / "
                     f"{b['template_pairs_merged']}")
        ex = a["examples"]["false_pairs"][:1]
        if ex:
            e = ex[0]
            line += (f"; e.g. neardup: {e['a']} ~ {e['b']} (J {e['j']}, words {e['words']}, "
                     f"cluster of {e['cluster_size']})")
        print(line)
    # Default and leave-one-corpus-out.
    best, key = pick(settings, scores, names)
    res["best_setting"] = {"setting": setting_name(best), "worst_f1": key[0],
                           "worst_precision": key[1], "mean_f1": key[3],
                           "per_corpus": {c: scores[best][c] for c in names}}
    print()
    print(f"### Grid ({args.grid}, {len(settings)} settings): the best by worst-corpus F1")
    print()
    ranked = sorted(settings, key=lambda s: rank_key(scores[s], names, s), reverse=True)
    print("| setting | worst F1 | worst P | mean F1 | " + " | ".join(f"{c} F1" for c in names)
          + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(names))
    for s in ranked[:min(len(ranked), 12)]:
        k = rank_key(scores[s], names, s)
        print(f"| {setting_name(s)} | {fmt(k[0])} | {fmt(k[1])} | {fmt(k[3])} | " +
              " | ".join(fmt(scores[s][c]["f1"]) for c in names) + " |")
    print()
    print(f"Default by worst-corpus F1: **{setting_name(best)}** (worst F1 {fmt(key[0])}, "
          f"worst P {fmt(key[1])})")
    print()
    print("### Leave one corpus out: the setting chosen without the corpus, scored on it")
    print()
    print("| left-out corpus | setting chosen on the others | P | R | F1 | doc R | largest | "
          "datasketch F1 | targets (P>=0.99, R>=0.95, F1>=datasketch) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    res["leave_one_out"] = {}
    for c in names:
        others = [x for x in names if x != c] or names
        s, _ = pick(settings, scores, others)
        r = scores[s][c]
        dsf1 = res["corpora"][c]["datasketch"]["f1"]
        miss = [t for t, ok in [("P", r["precision"] >= 0.99), ("R", r["recall"] >= 0.95),
                                ("F1", r["f1"] >= dsf1 - 1e-12)] if not ok]
        verdict = "met" if not miss else "not met: " + ", ".join(miss)
        res["leave_one_out"][c] = {"setting": setting_name(s), **r, "datasketch_f1": dsf1,
                                   "targets": verdict}
        print(f"| {c} | {setting_name(s)} | {fmt(r['precision'])} | {fmt(r['recall'])} | "
              f"{fmt(r['f1'])} | {fmt(r['doc_recall'])} | {r['largest_cluster']} | "
              f"{fmt(dsf1)} | {verdict} |")
    res["seconds"] = time.time() - t0
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print()
    print(f"wrote {args.out} ({time.time() - t0:.0f}s)")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--root", required=True)
    r.add_argument("--corpora", required=True)
    r.add_argument("--neardup", required=True)
    r.add_argument("--grid", choices=sorted(GRIDS), default="small")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--min-words", default="",
                   help="comma-separated --min-words values to add to the grid "
                        "(default: none, the CLI's own)")
    r.add_argument("--out", required=True)
    d = sub.add_parser("datasketch")
    d.add_argument("--dir", required=True)
    args = ap.parse_args()
    if args.cmd == "run":
        args.jobs = max(1, min(args.jobs, 2))
        run(args)
    else:
        datasketch_job(args.dir)


if __name__ == "__main__":
    main()
