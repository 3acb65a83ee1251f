"""neardup.spark on a local[2] master: the same clusters, fingerprints and Jaccard scores as
`neardup dedup`, skew, bad input, incremental runs and the command line.

Needs pyspark (with pandas and pyarrow) and Java 17; scripts/test_python.sh installs the
first, .ci/run the second. Nothing here skips: a missing piece fails the suite."""

from __future__ import annotations

import glob
import itertools
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import neardup
from neardup.spark import AccountingError, Options, dedup
from real_corpus import real_records

NEARDUP = os.environ.get("NEARDUP_BIN", "neardup")
HERE = Path(__file__).resolve().parent

#: The CLI's flags for the job's linkage: connected components of every verified pair.
CLI_SAME_RULE = ["--chain-floor", "0", "--max-candidates", "1000000"]


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("neardup tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        # The default 1 GiB heap holds the driver, the executors and every test's cached
        # stages in local mode; the tests' real corpus of 10k records needs more.
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _release_cached_stages(request):
    """Each test's persisted stages are released after it (what `Result.unpersist` does
    for a result the test did not release), so the session's memory does not grow."""
    yield
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").catalog.clearCache()


def write_jsonl(path: Path, records) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False))
            f.write("\n")
    return path


def run_cli(path: Path, out: Path, *flags: str) -> dict:
    store = out.parent / (out.name + ".db")
    done = subprocess.run(
        [NEARDUP, "dedup", str(path), "--out", str(out), "--store", str(store), "--pairs", *flags],
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 2), done.stderr
    read = lambda name: [json.loads(line) for line in open(out / f"{name}.jsonl", encoding="utf-8")]
    return {name: read(name) for name in ("kept", "clusters", "merges", "rejects", "pairs")}


def partition(clusters) -> set:
    return {frozenset(c["members"]) for c in clusters}


def co_clustered(clusters) -> set:
    return {
        (a, b)
        for c in clusters
        for a, b in itertools.combinations(sorted(c["members"]), 2)
    }


def rows(df) -> list:
    return [r.asDict(recursive=True) for r in df.collect()]


# ---------------------------------------------------------------------------------------
# Equivalence with the CLI.


@pytest.fixture(scope="module")
def real_corpus(tmp_path_factory):
    records = real_records()
    assert len(records) >= 10_000, (
        f"only {len(records)} real records on this machine: install fortunes, fortunes-zh, "
        "manpages and manpages-dev (as .ci/run does)"
    )
    path = write_jsonl(tmp_path_factory.mktemp("real") / "real.jsonl", records)
    return records, path


def test_equivalence_with_the_cli_on_a_real_corpus(spark, real_corpus, tmp_path):
    records, path = real_corpus
    cli = run_cli(path, tmp_path / "cli", *CLI_SAME_RULE)
    result = dedup(spark.read.text(str(path)), json="value")
    report = result.report
    assert report["input_records"] == len(records)
    assert report["accounting_balanced"]

    # Clusters: the same partition, so pairwise F1 between the two is 1.0.
    ours = rows(result.clusters)
    theirs_pairs, ours_pairs = co_clustered(cli["clusters"]), co_clustered(ours)
    assert len(theirs_pairs) > 1000, "the corpus should hold real near-duplicates"
    common = len(theirs_pairs & ours_pairs)
    f1 = 2 * common / (len(theirs_pairs) + len(ours_pairs))
    assert f1 == 1.0
    assert partition(ours) == partition(cli["clusters"])
    # Survivors: the same one per cluster, with every source URL.
    assert {(c["survivor"], tuple(sorted(c["source_urls"]))) for c in ours} == {
        (c["survivor"], tuple(sorted(c["source_urls"]))) for c in cli["clusters"]
    }

    # Kept records: the same ids, fingerprints (bit for bit), sizes, URLs and languages.
    kept = [json.loads(r["value"]) for r in result.kept.collect()]
    key = lambda r: (
        r["id"],
        r["neardup_fingerprint"],
        r["cluster_size"],
        r["first_seen"],
        tuple(sorted(r["source_urls"])),
        r.get("neardup_language"),
        r["text"],
    )
    assert sorted(map(key, kept)) == sorted(map(key, cli["kept"]))
    # Each kept line holds the record's own members as the CLI's does, byte for byte.
    with open(tmp_path / "cli" / "kept.jsonl", encoding="utf-8") as f:
        cli_lines = {json.loads(line)["id"]: line.rstrip("\n") for line in f}
    members = lambda line: line[: line.rindex('"source_urls":')]
    for r in result.kept.collect():
        assert members(r["value"]) == members(cli_lines[json.loads(r["value"])["id"]])

    # Near-duplicate pairs: the same pairs, distances and Jaccard scores (exact floats).
    near = lambda ps: {
        (min(p["a"], p["b"]), max(p["a"], p["b"])): (p["distance"], p["jaccard"])
        for p in ps
        if p["rule"] == "simhash+jaccard"
    }
    assert near(rows(result.pairs)) == near(cli["pairs"])
    # Merged records: the same records, with their own fingerprints, under the same survivor.
    merged = lambda ms: sorted((m["merged"], m["merged_fingerprint"]) for m in ms)
    assert merged(rows(result.merges)) == merged(cli["merges"])
    assert len(rows(result.rejects)) == len(cli["rejects"])
    assert report["kept"] == len(cli["kept"])
    assert report["candidate_pairs"] >= report["verified_pairs"] - sum(
        1 for p in cli["pairs"] if p["rule"] == "exact"
    )


def hosted(records, per_host: int) -> list:
    """`records` with https URLs, `per_host` consecutive records a host (real pages of one
    kind, as a site's are: man pages of one section, copyright files, fortunes)."""
    return [
        dict(r, url=f"https://h{i // per_host}.example/{i}") for i, r in enumerate(records)
    ]


def test_boilerplate_is_learned_and_left_out_as_the_cli_does(spark, real_corpus, tmp_path):
    records, _ = real_corpus
    # Hosts of 150 pages: under one lossy-counting bucket (200 pages at 5%) and the sample,
    # where the CLI's counts are exact and its sample is every page.
    sample = hosted(records[::4], 150)
    path = write_jsonl(tmp_path / "hosted.jsonl", sample)
    cli = run_cli(path, tmp_path / "cli", *CLI_SAME_RULE, "--boilerplate")
    cli_report = json.loads((tmp_path / "cli" / "report.json").read_text())
    with dedup(spark.read.text(str(path)), json="value", boilerplate=True) as result:
        learned = result.report["boilerplate_hosts"]
        theirs = {h["host"]: (h["pages_learned_from"], h["boilerplate_shingles"]) for h in cli_report["boilerplate_hosts"]}
        ours = {h["host"]: (h["pages_learned_from"], h["boilerplate_shingles"]) for h in learned}
        assert ours == theirs
        assert sum(n for _, n in ours.values()) > 100, "real pages of one kind share furniture"
        assert partition(rows(result.clusters)) == partition(cli["clusters"])
        fingerprints = {json.loads(r["value"])["id"]: json.loads(r["value"])["neardup_fingerprint"] for r in result.kept.collect()}
        assert fingerprints == {r["id"]: r["neardup_fingerprint"] for r in cli["kept"]}
        result.write(str(tmp_path / "day1"))
    # The boilerplate changed fingerprints: without it, others.
    plain = dedup(spark.read.text(str(path)), json="value")
    plain_fps = {json.loads(r["value"])["id"]: json.loads(r["value"])["neardup_fingerprint"] for r in plain.kept.collect()}
    changed = [i for i, fp in fingerprints.items() if plain_fps.get(i) not in (None, fp)]
    assert len(changed) > len(fingerprints) // 10

    # A later run applies the previous run's boilerplate without learning (one record is
    # too few), as a store's applies in the CLI: a page sent again under a new id gets the
    # fingerprint its first copy got, not its plain one.
    written = spark.read.parquet(str(tmp_path / "day1" / "boilerplate")).collect()
    assert {r["host"]: r["pages"] for r in written} == {h: p for h, (p, _) in ours.items()}
    first = next(r for r in sample if r["id"] == changed[0])
    again = [dict(first, id="again:" + first["id"])]
    later = dedup(spark.createDataFrame(again), previous=str(tmp_path / "day1" / "state"))
    assert later.report["boilerplate_hosts"] == learned
    [merge] = [m for m in rows(later.merges) if m["merged"] == again[0]["id"]]
    assert merge["rule"] == "exact"
    assert merge["merged_fingerprint"] == fingerprints[first["id"]] != plain_fps[first["id"]]


def test_the_boilerplate_sample_is_the_smallest_document_ids(spark, real_corpus):
    """A host over the sample: its pages of the smallest document ids are counted, however
    the input is partitioned."""
    records, _ = real_corpus
    sample = hosted(records[1::5][:600], 600)
    df = spark.createDataFrame(sample)
    one = dedup(df, boilerplate=True, boilerplate_sample_pages=100).report["boilerplate_hosts"]
    other = dedup(df.repartition(7), boilerplate=True, boilerplate_sample_pages=100).report["boilerplate_hosts"]
    assert one == other and len(one) == 1 and one[0]["pages_learned_from"] == 600
    ids = sorted(sample, key=lambda r: neardup.doc_id(str(r["id"])))[:100]
    learner = neardup.BoilerplateLearner(min_pages=20, sample_pages=100, text=["text"])
    import pyarrow as pa

    batch = neardup.with_hosts(pa.RecordBatch.from_pylist(ids))
    learner.add(batch)
    [row] = learner.finish().to_pylist()
    assert len(row["shingles"]) // 8 == one[0]["boilerplate_shingles"] > 0


def test_fingerprints_are_the_python_packages(spark, real_corpus):
    records, _ = real_corpus
    sample = [r for r in records[::97] if r["text"].strip()][:60]
    df = spark.createDataFrame(sample)
    result = dedup(df, detect_language=False)
    got = {r["id"]: r["neardup_fingerprint"] for r in result.kept.collect()}
    assert len(got) >= 30
    fp = neardup.Fingerprinter()
    for r in sample:
        if r["id"] in got:
            assert got[r["id"]] == f"{int(fp.fingerprint([r['text']])[0]):016x}"


@pytest.mark.parametrize("bits,k", [(64, 0), (64, 3), (64, 16), (64, 63), (128, 0), (128, 1), (128, 28), (128, 127)])
def test_block_rows_are_the_libraries_pigeonhole_blocks(spark, bits, k):
    """The job builds its block rows in the JVM (`block_rows`); they are the rows
    `neardup.pigeonhole_blocks` makes, blocks that straddle the two halves included."""
    import random

    import pyarrow as pa

    from neardup.spark._stages import block_rows

    rng = random.Random(bits * 1000 + k)
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v
    fps = [rng.getrandbits(bits) for _ in range(200)] + [0, (1 << bits) - 1]
    docs = list(range(len(fps)))
    lo = [signed(f & ((1 << 64) - 1)) for f in fps]
    hi = [signed(f >> 64) for f in fps]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(docs, pa.int64()), pa.array(lo, pa.int64()), pa.array(hi, pa.int64())],
        names=["doc", "fp", "fp_hi"],
    )
    want = neardup.pigeonhole_blocks(batch, bits=bits, k=k).to_pylist()
    df = spark.createDataFrame(list(zip(docs, lo, hi)), "doc long, fp long, fp_hi long")
    got = [r.asDict() for r in block_rows(df, bits, k).collect()]
    assert len(got) == len(want) == len(fps) * (k + 1)
    key = lambda r: (r["doc"], r["block"])
    if bits == 128 and k == 0:
        # One 128-bit block: hashed in the JVM, folded in Rust; equal blocks, equal values.
        by_fp = {}
        for r in got:
            by_fp.setdefault((r["fp"], r["fp_hi"]), set()).add(r["value"])
        assert all(len(v) == 1 for v in by_fp.values())
        return
    assert sorted(got, key=key) == sorted(want, key=key)


# ---------------------------------------------------------------------------------------
# Skew, empty input, all duplicates, bad records.


def _edits(base: str, n: int) -> list:
    """`n` copies of `base`, each with one of its words replaced: one block value shared by
    nearly all of them."""
    words = base.split()
    out = []
    for i in range(n):
        w = list(words)
        w[(i * 7) % len(w)] = f"edit{i}"
        out.append(" ".join(w))
    return out


def test_a_shared_block_is_tiled_within_the_cap_and_reported(spark, real_corpus):
    records, _ = real_corpus
    base = next(r["text"] for r in records if 3000 < len(r["text"].split()) * 6 < 12000)
    texts = _edits(base, 300) + [r["text"] for r in records[-300:]]
    data = [{"id": f"r{i:04d}", "text": t} for i, t in enumerate(texts)]
    df = spark.createDataFrame(data)
    # The tile pairs of one group spread over the shuffle's partitions (as on a large
    # corpus) instead of being coalesced into one: a record in several tiles is still one
    # row of its group.
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        capped = dedup(df, max_bucket=40, verify="groups", now=None)
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    skew = capped.report["skew"]
    assert skew["search"] == "blocks"
    # Most of the 17 blocks have a value nearly every copy shares: every such group is
    # listed, beyond the five largest, largest first.
    assert len(skew["split_buckets"]) > 5, skew
    sizes = [b["size"] for b in skew["split_buckets"]]
    assert sizes == sorted(sizes, reverse=True)
    for b in skew["split_buckets"]:
        assert b["size"] > 40 and b["tiles"] == -(-b["size"] // 40)
    assert max(b["size"] for b in skew["largest_buckets"]) >= 250
    whole = dedup(df, max_bucket=100_000, verify="groups")
    assert not whole.report["skew"]["split_buckets"]
    # Tiling changes nothing found.
    pairs = lambda r: sorted((p["a"], p["b"], p["distance"], p["jaccard"]) for p in rows(r.pairs))
    assert pairs(capped) == pairs(whole)
    assert partition(rows(capped.clusters)) == partition(rows(whole.clusters))
    # Tiles in set-size order cut the copies' one shared length into tiles of the cap.
    tiled = dedup(df, max_bucket=40, verify="tiles")
    assert tiled.report["skew"]["tiles"] == -(-tiled.report["skew"]["records"] // 40)
    assert pairs(tiled) == pairs(whole)
    assert capped.report["accounting_balanced"]
    assert capped.report["kept"] + capped.report["merged"] == len(data)


def test_verification_by_join_finds_the_same_pairs(spark, real_corpus):
    records, _ = real_corpus
    df = spark.createDataFrame(records[::5][:2000])
    groups = dedup(df, verify="groups")
    joined = dedup(df, verify="join")
    assert joined.report["rule"]["verify"] == "join"
    pairs = lambda r: sorted((p["a"], p["b"], p["rule"], p["distance"], p["jaccard"]) for p in rows(r.pairs))
    assert len(pairs(groups)) > 20
    assert pairs(joined) == pairs(groups)
    # Verification in groups counts (and compares) only the candidates the set sizes allow;
    # the join counts every pair within k.
    verified = sum(1 for p in pairs(groups) if p[2] == "simhash+jaccard")
    assert verified <= groups.report["candidate_pairs"] < joined.report["candidate_pairs"]
    with pytest.raises(ValueError, match="verify"):
        Options(verify="nowhere")


@pytest.mark.parametrize("bits,k", [(64, 16), (64, 6), (128, 28)])
def test_tiles_find_the_pairs_the_pigeonhole_groups_find(spark, real_corpus, bits, k):
    records, _ = real_corpus
    df = spark.createDataFrame(records[::5][:2000])
    groups = dedup(df, bits=bits, max_distance=k, verify="groups")
    # Tiles of at most 300 records (6 or 7 of them: exact copies are not tiled) in set-size
    # order: only tiles whose set lengths can meet make a pair (each with itself, and
    # fewer than all pairs of them on real text, whose lengths vary widely).
    tiled = dedup(df, bits=bits, max_distance=k, verify="tiles", max_bucket=300)
    skew = tiled.report["skew"]
    tiles = -(-skew["records"] // 300)
    assert tiles >= 6
    assert (skew["search"], skew["tiles"]) == ("tiles", tiles), skew
    assert tiles <= skew["tile_pairs"] < tiles * (tiles + 1) // 2, skew
    assert tiled.report["rule"]["verify"] == "tiles"
    pairs = lambda r: sorted((p["a"], p["b"], p["rule"], p["distance"], p["jaccard"]) for p in rows(r.pairs))
    assert len(pairs(groups)) > 20
    assert pairs(tiled) == pairs(groups)
    # Both count the pairs within k whose set sizes allow the threshold, each once.
    assert tiled.report["candidate_pairs"] == groups.report["candidate_pairs"]
    assert partition(rows(tiled.clusters)) == partition(rows(groups.clusters))


def test_tiles_of_an_incremental_run_pair_new_records_with_old_ones_only(spark, real_corpus, tmp_path):
    records, _ = real_corpus
    sample = records[::4][:2400]
    first, second = sample[::2], sample[1::2]
    dedup(spark.createDataFrame(first), verify="groups").write(str(tmp_path / "day1"))
    state = str(tmp_path / "day1" / "state")
    day2 = spark.createDataFrame(second)
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    groups = dedup(day2, previous=state, verify="groups", now=now)
    tiled = dedup(day2, previous=state, verify="tiles", max_bucket=400, now=now)
    skew = tiled.report["skew"]
    # 3 old tiles and 3 new ones: at most 6 pairs of new tiles and 9 of a new and an old
    # one (those whose lengths can meet), none of two old ones.
    assert (skew["tiles"], skew["old_tiles"]) == (6, 3), skew
    assert 3 <= skew["tile_pairs"] < 15, skew
    pairs = lambda r: sorted((p["a"], p["b"], p["rule"], p["distance"], p["jaccard"]) for p in rows(r.pairs))
    assert len(pairs(groups)) > 10
    assert pairs(tiled) == pairs(groups)
    assert partition(rows(tiled.clusters)) == partition(rows(groups.clusters))
    assert rows(tiled.merges) and sorted(map(str, rows(tiled.merges))) == sorted(map(str, rows(groups.merges)))


@pytest.mark.parametrize("old_tiles", [0, 3])
def test_the_router_sends_every_pair_the_sizes_allow_to_one_tile_pair(old_tiles):
    import random

    import pyarrow as pa

    from neardup.spark._stages import _meet, _Router, _tiles_of

    rng = random.Random(old_tiles)
    t = 0.8
    n = 300
    sizes = [int(rng.lognormvariate(4, 1.5)) for _ in range(n)] + [50] * 40
    hashes = [rng.getrandbits(64) - (1 << 63) for _ in sizes]
    olds = [old_tiles > 0 and rng.random() < 0.4 for _ in sizes]
    orders = [(z << 32) + (h & 0xFFFFFFFF) for z, h in zip(sizes, hashes)]

    def cuts(side, count):
        ranked = sorted(o for o, is_old in zip(orders, olds) if is_old == side)
        return _tiles_of([ranked[len(ranked) * i // count] for i in range(1, count)])

    new, old = cuts(False, 5), (cuts(True, old_tiles) if old_tiles else None)
    tiles = new.count + (old.count if old else 0)
    pairs = [(i, j) for i in range(new.count) for j in range(i, new.count) if _meet(new.lo[i], new.hi[i], new.lo[j], new.hi[j], t)]
    if old:
        pairs += [(i, new.count + j) for i in range(new.count) for j in range(old.count) if _meet(new.lo[i], new.hi[i], old.lo[j], old.hi[j], t)]
    numbers = [a * tiles + b for a, b in pairs]
    router = _Router(new, old, t, numbers, [x * 7 for x in numbers])
    batch = pa.RecordBatch.from_pydict(
        {"doc": list(range(len(sizes))), "size": sizes, "old": olds, "order": orders},
        schema=pa.schema([("doc", pa.int64()), ("size", pa.int32()), ("old", pa.bool_()), ("order", pa.int64())]),
    )
    routed = router.route(batch).to_pylist()
    assert all(r["key"] == 7 * (r["ta"] * tiles + r["tb"]) for r in routed)
    assert {(r["ta"], r["tb"]) for r in routed} <= set(pairs)
    at = {}
    for r in routed:
        at.setdefault(r["doc"], {})[(r["ta"], r["tb"])] = r["side"]
    for x in range(len(sizes)):
        for y in range(x + 1, len(sizes)):
            small, large = sorted((sizes[x], sizes[y]))
            if olds[x] and olds[y] or small < t * large * (1 - 1e-9):
                continue
            # Exactly one tile pair holds both, on opposite sides (or both in one tile).
            shared = [p for p in at[x] if p in at[y] and {at[x][p], at[y][p]} in ({-1}, {0, 1})]
            assert len(shared) == 1, (x, y, sizes[x], sizes[y], at[x], at[y])
    # A row goes to its own tile and to few others.
    assert len(routed) < 2.5 * len(sizes)


def test_auto_verification_tiles_where_blocks_are_narrow():
    assert Options().verify == "tiles"  # 64 bits, k = 16: blocks of 3-4 bits
    assert Options(max_distance=14).verify == "tiles"
    assert Options(max_distance=10).verify == "groups"
    assert Options(max_distance=3).verify == "groups"
    assert Options(bits=128, max_distance=28).verify == "tiles"
    assert Options(bits=128, max_distance=16).verify == "groups"
    assert Options(verify="groups").verify == "groups"


def test_tile_counts_and_their_partitions(spark):
    from pyspark.sql import functions as F

    from neardup.spark._stages import partition_keys, tile_count

    # Two tiles a slot, tiles of at least 2,000 records, none over the cap.
    assert tile_count(60_000, 50_000, 2) == 4
    assert tile_count(60_000, 50_000, 8) == 16
    assert tile_count(5_000, 50_000, 8) == 2
    assert tile_count(5, 50_000, 2) == 1
    assert tile_count(3_000, 50_000, 8) == 1
    assert tile_count(1_000_000, 50_000, 2) == 20
    # Each tile pair's key goes to a partition of its own, as Spark hashes it.
    for n in (1, 6, 28, 210):
        keys = partition_keys(n)
        placed = spark.createDataFrame([(k,) for k in keys], "key int").repartition(n, "key")
        assert sorted(placed.select(F.spark_partition_id().alias("p")).rdd.map(lambda r: r.p).collect()) == list(range(n))


def test_components_on_the_driver_and_on_the_cluster_agree(spark, real_corpus):
    records, _ = real_corpus
    df = spark.createDataFrame(records[::4][:2500])
    driver = dedup(df)
    cluster = dedup(df, local_components=0)
    assert driver.report["components_on"] == "driver" and driver.report["component_rounds"] == 0
    assert cluster.report["components_on"] == "cluster" and cluster.report["component_rounds"] >= 2
    assert len(rows(driver.clusters)) > 10
    assert partition(rows(driver.clusters)) == partition(rows(cluster.clusters))
    survivors = lambda r: sorted((c["survivor"], c["size"]) for c in rows(r.clusters))
    assert survivors(driver) == survivors(cluster)
    import pyarrow as pa

    out = neardup.components(pa.array([5, 7, 1, 9], pa.int64()), pa.array([7, 1, 2, 10], pa.int64()))
    assert out.to_pydict() == {"doc": [1, 2, 5, 7, 9, 10], "root": [1, 1, 1, 1, 9, 9]}


def test_survivors_on_the_driver_and_on_the_cluster_are_the_same_rows(spark, real_corpus, tmp_path, monkeypatch):
    """Every output, row for row, whether the clusters' survivors, merges and pairs are
    computed on the driver (few clustered records) or by aggregations on the cluster; in
    a first run and in an incremental one (old survivors displaced, stored ids rejected)."""
    from neardup.spark import _survivors

    records, _ = real_corpus
    sample = records[1::5][:2000]
    # Exact copies under new ids, to have "exact" merges beside the near ones.
    copies = [dict(r, id=r["id"] + "-copy", first_seen="2020-01-01T00:00:00Z") for r in sample[:40]]
    day1, day2 = sample[:1000], sample[1000:] + copies + sample[:3]
    at = datetime(2026, 5, 1, tzinfo=timezone.utc)

    def outputs(result) -> dict:
        out = {name: sorted(json.dumps(r, sort_keys=True, default=str) for r in rows(getattr(result, name))) for name in ("kept", "clusters", "merges", "pairs", "rejects")}
        out["state"] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows(result.state.drop("set", "content")))
        out["report"] = {k: v for k, v in result.report.items() if k not in ("survivors_on", "previous")}
        return out

    def run(where: str) -> list:
        if where == "cluster":
            monkeypatch.setattr(_survivors, "LOCAL_SURVIVORS", 0)
        else:
            monkeypatch.setattr(_survivors, "LOCAL_SURVIVORS", 1_000_000)
        first = dedup(spark.createDataFrame(day1), now=at)
        assert first.report["survivors_on"] == where
        first.write(str(tmp_path / where))
        second = dedup(spark.createDataFrame(day2), now=at, previous=str(tmp_path / where / "state"))
        assert second.report["survivors_on"] == where
        return [outputs(first), outputs(second)]

    driver, cluster = run("driver"), run("cluster")
    incremental = driver[1]
    assert incremental["report"]["displaced_survivors"] > 0 and incremental["report"]["merged"] > 40
    assert any('"rule": "exact"' in m for m in incremental["merges"])
    assert any(r.startswith('{"id": ') and "already stored" in r for r in incremental["rejects"])
    for d, c in zip(driver, cluster):
        for name in d:
            assert d[name] == c[name], name


def test_empty_input(spark, tmp_path):
    path = write_jsonl(tmp_path / "empty.jsonl", [])
    result = dedup(spark.read.text(str(path)), json="value")
    assert result.report["input_records"] == 0
    assert (result.report["kept"], result.report["merged"], result.report["rejected"]) == (0, 0, 0)
    assert result.report["accounting_balanced"]
    result.write(str(tmp_path / "out"), format="jsonl")
    assert json.loads((tmp_path / "out" / "report.json").read_text())["kept"] == 0


def test_all_duplicates_collapse_onto_the_earliest(spark):
    text = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat."
    data = [
        {"id": f"d{i:02d}", "url": f"https://e.com/{i}", "first_seen": f"2026-01-{(i % 28) + 1:02d}T00:00:00Z", "text": text}
        for i in range(40)
    ]
    with dedup(spark.createDataFrame(data)) as result:
        stages = list(result.persisted)
        assert stages and all(s.is_cached for s in stages)
        r = result.report
        assert (r["kept"], r["merged"], r["rejected"], r["clusters"]) == (1, 39, 0, 1)
        [kept] = rows(result.kept)
        assert kept["id"] == "d00" and kept["first_seen"] == "2026-01-01T00:00:00Z"
        assert kept["cluster_size"] == 40
        assert sorted(kept["source_urls"]) == sorted(d["url"] for d in data)
        merges = rows(result.merges)
        assert {m["rule"] for m in merges} == {"exact"} and {m["kept"] for m in merges} == {"d00"}
    # Leaving the block released every persisted stage; the outputs are still readable.
    assert result.persisted == [] and not any(s.is_cached for s in stages)
    assert [k["id"] for k in rows(result.kept)] == ["d00"]


def test_bad_records_are_rejected_with_reasons(spark, tmp_path):
    good = "A record with enough words to fingerprint, about nothing in particular at all."
    lines = [
        json.dumps({"id": "ok1", "text": good}),
        json.dumps({"id": "no-text"}),
        json.dumps({"id": "number", "text": 42}),
        json.dumps({"text": good + " no id"}),
        json.dumps({"id": "bad-url", "url": 7, "text": good}),
        json.dumps({"id": "bad-time", "first_seen": "yesterday", "text": good}),
        "{not json " + "é" * 600,
        json.dumps(["an", "array"]),
        json.dumps({"id": "ok1", "text": good + " again, with other words"}),
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    result = dedup(spark.read.text(str(path)), json="value")
    r = result.report
    assert r["input_records"] == len(lines)
    assert r["kept"] + r["merged"] + r["rejected"] == len(lines)
    assert r["kept"] == 1 and r["rejected"] == len(lines) - 1
    reasons = {x["id"]: x["reason"] for x in rows(result.rejects) if x["id"]}
    assert "text" in reasons["no-text"]
    assert "text" in reasons["number"] and "number" in reasons["number"]
    assert "url" in reasons["bad-url"]
    assert "first_seen" in reasons["bad-time"]
    assert "duplicate id" in reasons["ok1"]
    anonymous = [x for x in rows(result.rejects) if not x["id"]]
    assert len(anonymous) == 3 and all(x["reason"] and x["input"] for x in anonymous)
    # Each rejected line's first 500 characters: from the analysis, or read again for a
    # repeated id.
    inputs = {x["input"] for x in rows(result.rejects)}
    assert lines[6][:500] in inputs and lines[1] in inputs and lines[-1] in inputs
    assert max(len(i) for i in inputs) == 500


def test_kept_lines_joined_without_a_broadcast_are_the_same(spark, real_corpus, tmp_path, monkeypatch):
    """Past `BROADCAST_KEPT` kept records, the input read again is joined to them by a
    shuffle: the same lines."""
    from neardup.spark import _survivors

    records, _ = real_corpus
    path = write_jsonl(tmp_path / "in.jsonl", records[:600])

    def kept():
        with dedup(spark.read.text(str(path)), json="value") as result:
            lines = sorted(r["value"] for r in result.kept.collect())
            assert len(lines) == result.report["kept"]
            return lines

    broadcast = kept()
    monkeypatch.setattr(_survivors, "BROADCAST_KEPT", 0)
    # Nor may the planner broadcast on its own estimate of 600 records.
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        with dedup(spark.read.text(str(path)), json="value") as result:
            plan = result.kept._jdf.queryExecution().executedPlan().toString()
            joins = [line.strip(" :") for line in plan.splitlines() if "Join [_nd_row" in line]
            assert joins and all(j.startswith("+- SortMergeJoin") for j in joins), joins
        assert kept() == broadcast
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)


def test_an_input_that_changes_between_reads_stops_the_job(spark):
    """The kept records' own columns are read again from the input; a DataFrame that
    gives other rows the second time (a nondeterministic UDF here) is named, not written."""
    import random

    from pyspark.sql import functions as F

    from neardup.spark._job import CHANGED

    shuffled = F.udf(lambda t: t + (" again" if random.random() < 0.5 else ""), "string").asNondeterministic()
    df = spark.createDataFrame(
        [(f"r{i}", f"record {i} has words of its own: {' '.join(str(i * j) for j in range(12))}") for i in range(40)],
        "id string, text string",
    ).withColumn("text", shuffled("text"))
    result = dedup(df)
    with pytest.raises(Exception, match="the input changed between the job's two reads"):
        result.kept.collect()
    assert CHANGED.startswith("the input changed between the job's two reads")


def test_bad_rows_of_a_dataframe_are_rejected(spark):
    df = spark.createDataFrame(
        [("a", "some words in a row that is fine"), ("b", None), (None, "text without an id")],
        "id string, text string",
    )
    result = dedup(df)
    r = result.report
    assert (r["kept"], r["rejected"]) == (1, 2)
    with pytest.raises(ValueError, match="no column 'body'"):
        dedup(df, text_col="body")
    with pytest.raises(TypeError):
        dedup(spark.createDataFrame([("a", 5)], "id string, text int"))


# ---------------------------------------------------------------------------------------
# Incremental runs, profiles, stable ids.


def test_an_incremental_run_matches_one_run_over_everything(spark, real_corpus, tmp_path):
    records, _ = real_corpus
    sample = records[::6][:1500]
    first, second = sample[: len(sample) // 2], sample[len(sample) // 2 :]
    day1 = dedup(spark.createDataFrame(first))
    day1.write(str(tmp_path / "day1"))
    again = first[:5]
    day2 = dedup(spark.createDataFrame(second + again), previous=str(tmp_path / "day1" / "state"))
    both = dedup(spark.createDataFrame(sample))
    r = day2.report
    assert r["input_records"] == len(second) + len(again)
    assert r["kept"] + r["merged"] + r["rejected"] == r["input_records"]
    already = [x for x in rows(day2.rejects) if x["reason"].startswith("already stored")]
    assert len(already) == len(again)
    displaced = {m["merged"] for m in rows(day2.merges) if m["displaced"]}
    kept = ({r["id"] for r in rows(day1.kept)} - displaced) | {r["id"] for r in rows(day2.kept)}
    assert kept == {r["id"] for r in rows(both.kept)}


def test_a_previous_run_of_another_profile_is_refused(spark, tmp_path):
    df = spark.createDataFrame([{"id": "a", "text": "one two three four five six seven"}])
    dedup(df).write(str(tmp_path / "run"))
    with pytest.raises(neardup.ProfileMismatch, match="w3"):
        dedup(df, shingle=3, previous=str(tmp_path / "run" / "state"))


def test_ids_and_survivors_do_not_depend_on_partitioning(spark, real_corpus):
    records, _ = real_corpus
    sample = records[::8][:1200]
    df = spark.createDataFrame(sample)
    one = dedup(df.repartition(1))
    many = dedup(df.repartition(7))
    assert partition(rows(one.clusters)) == partition(rows(many.clusters))
    assert sorted(r["id"] for r in rows(one.kept)) == sorted(r["id"] for r in rows(many.kept))
    state = {r["id"]: r["doc"] for r in one.state.select("id", "doc").collect()}
    assert all(doc == neardup.doc_id(i) for i, doc in list(state.items())[:50])


def test_code_mode_and_synonyms_run_as_in_the_cli(spark, tmp_path):
    a = "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2\n    return s\n"
    b = "# Sum.\ndef acc(values):\n    res = 0\n    for v in values:\n        res += v * 2\n    return res\n"
    code = [{"id": "src/a.py", "text": a}, {"id": "lib/b.py", "text": b}]
    result = dedup(spark.createDataFrame(code), tokens="code-auto")
    assert result.report["rule"]["profile"].endswith("/tok=code-auto")
    assert (result.report["kept"], result.report["merged"]) == (1, 1)
    # As words, the renamed copy is another text.
    result = dedup(spark.createDataFrame(code))
    assert (result.report["kept"], result.report["merged"]) == (2, 0)

    groups = tmp_path / "synonyms.txt"
    groups.write_text("car automobile\nbig huge\n")
    x = "the big car was parked outside the old station all night long in the rain again"
    y = "the huge automobile was parked outside the old station all night long in the rain again"
    pair = [{"id": "x", "text": x}, {"id": "y", "text": y}]
    result = dedup(spark.createDataFrame(pair), synonyms=str(groups))
    assert "/syn:" in result.report["rule"]["profile"]
    assert (result.report["kept"], result.report["merged"]) == (1, 1)
    assert dedup(spark.createDataFrame(pair)).report["merged"] == 0


def test_options_are_checked_before_spark_runs():
    with pytest.raises(ValueError, match="max_distance"):
        Options(max_distance=64)
    with pytest.raises(ValueError, match="min_jaccard"):
        Options(min_jaccard=0)
    with pytest.raises(ValueError, match="boilerplate_share"):
        Options(boilerplate=True, boilerplate_share=1.5)
    with pytest.raises(ValueError, match="boilerplate_sample_pages"):
        Options(boilerplate_sample_pages=0)
    assert Options(boilerplate=True).rule()["boilerplate"]["min_count"] == 10
    assert Options().rule()["boilerplate"] is False
    assert Options().profile_string == neardup.Fingerprinter().profile
    assert issubclass(AccountingError, RuntimeError)
    # The default threshold follows the tokens, as the CLI's and the Deduper's do.
    for tokens in ("words", "code-java", "code-auto"):
        assert Options(tokens=tokens).min_jaccard == neardup.Deduper(tokens=tokens).min_jaccard
    assert Options(tokens="code-go").min_jaccard == 0.7
    assert Options(tokens="code-go", min_jaccard=0.9).min_jaccard == 0.9


# ---------------------------------------------------------------------------------------
# The command line: python -m neardup.spark and spark-submit.


def _job(*args, **kw):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


def test_bad_arguments_exit_3_without_spark(tmp_path):
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "o"))
    assert done.returncode == 3 and "no such input" in done.stderr
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", "x.jsonl", "--output", "o", "--min-jaccard", "2")
    assert done.returncode == 3 and "min_jaccard" in done.stderr
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", "x.jsonl", "--output", "o", "--features", "code")
    assert done.returncode == 3 and "--features code needs --code-lang" in done.stderr
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", "x.jsonl", "--output", "o", "--code-lang", "rust")
    assert done.returncode == 3 and "--code-lang applies to --features code" in done.stderr
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", "x.jsonl", "--output", "o", "--boilerplate", "--boilerplate-min-count", "0")
    assert done.returncode == 3 and "boilerplate_min_count" in done.stderr


def test_session_settings_yield_to_the_ones_given():
    from pyspark import SparkConf

    from neardup.spark._session import CLIENT_JIT, local_settings

    local = local_settings("local[3]", SparkConf(loadDefaults=False))
    assert local["spark.sql.shuffle.partitions"] == "12"
    assert local["spark.driver.extraJavaOptions"] == CLIENT_JIT
    assert int(local["spark.driver.memory"].rstrip("m")) >= 1024
    assert local["spark.sql.execution.arrow.maxRecordsPerBatch"] == "2048"
    # spark-submit's --conf and spark-defaults.conf win; a named partition count wins over them.
    given = SparkConf(loadDefaults=False).set("spark.driver.extraJavaOptions", "-Xss4m").set("spark.sql.shuffle.partitions", "7")
    mine = local_settings("local[2]", given)
    assert "spark.driver.extraJavaOptions" not in mine and "spark.sql.shuffle.partitions" not in mine
    assert local_settings("local[2]", given, shuffle_partitions=5)["spark.sql.shuffle.partitions"] == "5"
    # A cluster's driver and executors are not this machine's: only the batch size is set.
    cluster = local_settings("yarn", SparkConf(loadDefaults=False))
    assert set(cluster) == {"spark.ui.showConsoleProgress", "spark.sql.execution.arrow.maxRecordsPerBatch"}


def test_spark_submit_runs_the_job_like_the_cli(real_corpus, tmp_path):
    records, _ = real_corpus
    sample = records[::20][:400] + [{"id": "broken", "text": None}]
    path = write_jsonl(tmp_path / "in.jsonl", sample)
    script = _job(sys.executable, "-m", "neardup.spark", "script").stdout.strip()
    submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    done = _job(submit, "--master", "local[2]", script, "dedup", "--input", str(path), "--output", str(tmp_path / "out"), "--pairs")
    assert done.returncode == 2, done.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["accounting_balanced"] and report["rejected"] == 1
    kept = [json.loads(l) for p in glob.glob(str(tmp_path / "out" / "kept" / "part-*")) for l in open(p)]
    assert len(kept) == report["kept"] and all("neardup_fingerprint" in k for k in kept)
    cli = run_cli(path, tmp_path / "cli", *CLI_SAME_RULE)
    assert sorted(k["id"] for k in kept) == sorted(k["id"] for k in cli["kept"])
    rejects = [json.loads(l) for p in glob.glob(str(tmp_path / "out" / "rejects" / "part-*")) for l in open(p)]
    assert [r["id"] for r in rejects] == ["broken"]


def test_parquet_in_and_out(spark, tmp_path):
    data = [{"id": f"p{i}", "text": f"parquet record number {i % 3} with some shared words in it"} for i in range(9)]
    spark.createDataFrame(data).write.parquet(str(tmp_path / "in"))
    done = _job(sys.executable, "-m", "neardup.spark", "dedup", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--master", "local[1]")
    assert done.returncode == 0, done.stderr[-3000:]
    kept = spark.read.parquet(str(tmp_path / "out" / "kept"))
    assert kept.count() == 3
    assert {"source_urls", "first_seen", "cluster_size", "neardup_fingerprint"} <= set(kept.columns)
    assert spark.read.parquet(str(tmp_path / "out" / "merges")).count() == 6


def test_workers_read_an_unchanged_zip_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """`prepare` (run in every worker before a task) keeps PySpark's per-task
    `importlib.invalidate_caches()` from reading every zip on sys.path again (0.1-0.15 s
    a task on Python 3.11), and still sees an archive that changed."""
    import importlib
    import zipfile
    import zipimport

    from neardup.spark import _worker

    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("nd_zipped_a.py", "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(archive))
    # Whatever prepare changes is put back after the test.
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    monkeypatch.setattr(zipimport.zipimporter, "_neardup_stat_checked", False, raising=False)
    reads = []
    read_directory = zipimport._read_directory
    monkeypatch.setattr(zipimport, "_read_directory", lambda path: reads.append(path) or read_directory(path))
    for name in ("nd_zipped_a", "nd_zipped_b"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    _worker.prepare()
    assert importlib.import_module("nd_zipped_a").VALUE == 1
    # The first invalidation reads the archive (it may have changed since the importer
    # read it); later ones only look at its size and time.
    importlib.invalidate_caches()
    reads.clear()
    for _ in range(3):
        importlib.invalidate_caches()
    assert [r for r in reads if r == str(archive)] == []

    with zipfile.ZipFile(archive, "a") as z:
        z.writestr("nd_zipped_b.py", "VALUE = 2\n")
    importlib.invalidate_caches()
    assert importlib.import_module("nd_zipped_b").VALUE == 2
