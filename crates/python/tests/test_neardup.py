"""The Python package against the `neardup` command: the same fingerprints, bit for bit, and
the same decisions on the same real corpus; Arrow and list inputs alike; bad input named."""

import gzip
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import neardup

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "data" / "debian-copyright.jsonl.gz"


def cli() -> str:
    """The `neardup` binary: $NEARDUP_BIN, else the workspace's build (built if missing)."""
    if os.environ.get("NEARDUP_BIN"):
        return os.environ["NEARDUP_BIN"]
    for profile in ("debug", "release"):
        path = ROOT / "target" / profile / "neardup"
        if path.exists():
            return str(path)
    subprocess.run(["cargo", "build", "-q", "-p", "neardup-cli"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "debug" / "neardup")


def records():
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def corpus():
    return records()


@pytest.mark.parametrize("profile", ["xxh3", "blake2b"])
def test_fingerprints_equal_the_clis_bit_for_bit(tmp_path, corpus, profile):
    texts = [r["body_text"] for r in corpus]
    path = tmp_path / "texts.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for r in corpus:
            f.write(json.dumps({"id": r["id"], "text": r["body_text"]}) + "\n")
    out = subprocess.run(
        [cli(), "fingerprint", "--jsonl", str(path), "--profile", profile],
        check=True, capture_output=True, text=True,
    ).stdout
    want = [int(line.split("\t")[1], 16) for line in out.splitlines()]
    got = neardup.fingerprint(texts, profile=profile)
    assert got.dtype == np.uint64 and got.shape == (len(texts),)
    assert [int(v) for v in got] == want
    assert len(set(want)) > 200  # real, different texts (many licences repeat)


def test_128_bit_fingerprints_are_high_and_low_words(tmp_path, corpus):
    texts = [r["body_text"] for r in corpus[:50]]
    path = tmp_path / "texts.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": str(i), "text": t}) + "\n")
    out = subprocess.run(
        [cli(), "fingerprint", "--jsonl", str(path), "--bits", "128"],
        check=True, capture_output=True, text=True,
    ).stdout
    want = [int(line.split("\t")[1], 16) for line in out.splitlines()]
    got = neardup.Fingerprinter(bits=128).fingerprint(texts)
    assert got.shape == (50, 2)
    assert [(int(hi) << 64) | int(lo) for hi, lo in got] == want


def test_arrow_and_list_inputs_agree(corpus):
    texts = [r["body_text"] for r in corpus]
    f = neardup.Fingerprinter(threads=2)
    from_list = f.fingerprint(texts)
    assert np.array_equal(f.fingerprint(pa.array(texts)), from_list)
    assert np.array_equal(f.fingerprint(pa.array(texts, pa.large_string())), from_list)
    assert np.array_equal(f.fingerprint(pa.array(texts, pa.string_view())), from_list)
    chunked = pa.chunked_array([texts[:123], texts[123:124], texts[124:]])
    assert np.array_equal(f.fingerprint(chunked), from_list)
    assert np.array_equal(f.fingerprint(pa.array(texts).slice(10, 50)), from_list[10:60])
    assert np.array_equal(f.fingerprint(iter(texts)), from_list)


@pytest.mark.parametrize(
    "bad, kind, message",
    [
        (["a text", None], ValueError, "texts[1] is None"),
        (["a text", b"bytes"], TypeError, "texts[1] is bytes, not str"),
        (["a text", "another", 3], TypeError, "texts[2] is int, not str"),
        (["a text", ""], ValueError, "texts[1]: no words to fingerprint"),
        (["a text", "  ... !"], ValueError, "texts[1]: no words to fingerprint"),
        (pa.array(["a text", None, "x"]), ValueError, "texts[1] is null"),
        (pa.array([1, 2]), TypeError, "not of strings"),
        ("one string", TypeError, "pass a list of texts"),
    ],
)
def test_bad_input_names_its_position(bad, kind, message):
    with pytest.raises(kind) as e:
        neardup.fingerprint(bad)
    assert message in str(e.value)


def test_options_are_checked():
    with pytest.raises(ValueError, match="64 or 128"):
        neardup.Fingerprinter(bits=32)
    with pytest.raises(ValueError, match="profile"):
        neardup.Fingerprinter(profile="md5")
    with pytest.raises(ValueError, match="threads"):
        neardup.Fingerprinter(threads=0)
    assert neardup.Fingerprinter().profile == "neardup/4/xxh3/w4/b64/tf"
    assert neardup.Fingerprinter(shingle=3, weighting="presence").profile.endswith("/w3/b64/presence")
    # The profile's keywords are read in one place for every class and function.
    with pytest.raises(TypeError, match="unexpected keyword argument 'shingles'"):
        neardup.fingerprint(["a b c d e"], shingles=3)
    with pytest.raises(TypeError, match="shingle: "):
        neardup.Deduper(shingle="four")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_distanc'"):
        neardup.Deduper(max_distanc=3)
    assert neardup.Deduper(shingle=3, bits=128).profile == neardup.Fingerprinter(shingle=3, bits=128).profile
    with pytest.raises(TypeError):
        neardup.Fingerprinter("xxh3")


def test_synonyms_count_a_groups_words_as_one(tmp_path):
    groups = tmp_path / "synonyms.txt"
    groups.write_text("car automobile\nbig, huge\n")
    a = "the big car was parked outside the old station all night long in the rain"
    b = "the huge automobile was parked outside the old station all night long in the rain"
    f = neardup.Fingerprinter(synonyms=groups)
    assert "/syn:" in f.profile
    fa, fb = f.fingerprint([a, b])
    assert fa == fb
    plain = neardup.fingerprint([a, b])
    assert plain[0] != plain[1]
    d = neardup.Deduper(synonyms=str(groups))
    rows = d.process([{"id": "a", "text": a}, {"id": "b", "text": b}]).to_pylist()
    assert [r["decision"] for r in rows] == ["kept", "merged"]


def test_code_mode_reads_the_syntax_tree():
    f = neardup.Fingerprinter(tokens="code-python")
    assert f.profile.endswith("/tok=code-python")
    a = "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2\n    return s\n"
    b = "# Sum.\ndef acc(values):\n    res = 0\n    for v in values:\n        res += v * 2\n    return res\n"
    fa, fb = f.fingerprint([a, b])
    assert fa == fb
    words = neardup.fingerprint([a, b])
    assert words[0] != words[1]
    with pytest.raises(ValueError, match="code-LANG"):
        neardup.Fingerprinter(tokens="code-cobol")


def test_code_mode_has_its_own_default_threshold():
    # A function and a copy with two statements inserted: code Jaccard 0.79, between code
    # mode's default (0.7) and the words' (0.8).
    a = (
        "def total(items, scale):\n    s = 0\n    for x in items:\n        if x > 0:\n"
        "            s += x * scale\n        else:\n            s -= x\n    return s\n"
    )
    b = a.replace("    s = 0\n", "    s = 0\n    t = 1\n").replace(
        "    for x in items:\n", "    for x in items:\n        t = 2\n"
    )
    f = neardup.Fingerprinter(tokens="code-python")
    assert 0.7 <= neardup.jaccard(f.shingle_hashes(a), f.shingle_hashes(b)) < 0.8
    records = [{"id": "a", "text": a}, {"id": "b", "text": b}]
    assert neardup.Deduper().min_jaccard == 0.8
    d = neardup.Deduper(tokens="code-python")
    assert d.min_jaccard == 0.7
    assert [r["decision"] for r in d.process(records).to_pylist()] == ["kept", "merged"]
    d = neardup.Deduper(tokens="code-python", min_jaccard=0.8)
    assert d.min_jaccard == 0.8
    assert [r["decision"] for r in d.process(records).to_pylist()] == ["kept", "kept"]


def test_code_auto_reads_each_record_as_its_ids_language():
    a = "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2\n    return s\n"
    b = "# Sum.\ndef acc(values):\n    res = 0\n    for v in values:\n        res += v * 2\n    return res\n"
    # The ids name Python files: the renamed copy is the same syntax tree, an exact copy.
    d = neardup.Deduper(tokens="code-auto")
    rows = d.process([{"id": "src/a.py", "text": a}, {"id": "src/b.py", "text": b}]).to_pylist()
    assert [r["decision"] for r in rows] == ["kept", "merged"]
    # Ids without an extension code mode knows: read as words, so the copy stands apart.
    d = neardup.Deduper(tokens="code-auto")
    rows = d.process([{"id": "a", "text": a}, {"id": "b", "text": b}]).to_pylist()
    assert [r["decision"] for r in rows] == ["kept", "kept"]


def test_shingles_and_jaccard_are_the_verification_sets():
    a = "the quick brown fox jumps over the lazy dog by the river bank"
    b = a.replace("lazy", "sleepy")
    ha, hb = neardup.shingle_hashes(a), neardup.shingle_hashes(b)
    assert ha.dtype == np.uint64 and np.all(np.diff(ha.astype(np.float64)) > 0)
    inter = len(np.intersect1d(ha, hb))
    union = len(np.union1d(ha, hb))
    assert neardup.jaccard(a, b) == pytest.approx(inter / union)
    assert neardup.jaccard(ha, hb) == pytest.approx(inter / union)
    assert neardup.jaccard(a, a) == 1.0
    assert 0 < neardup.jaccard(a, b) < 1
    assert np.array_equal(neardup.Fingerprinter().shingle_hashes(a), ha)


def test_the_index_answers_exactly_what_a_scan_does():
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**63, size=5000, dtype=np.uint64)
    # Near copies, 0 to 5 bits away.
    near = fps[:200] ^ np.array([(1 << int(b)) - 1 for b in rng.integers(0, 6, 200)], dtype=np.uint64)
    stored = np.concatenate([fps, near])
    ids = np.arange(len(stored), dtype=np.uint64) + 1000
    index = neardup.HammingIndex(k=4, expected=100)  # laid out again as it grows
    index.add(ids[:3000], stored[:3000])
    index.add(ids[3000:], stored[3000:])
    assert len(index) == len(stored)
    queries = stored[:300]
    q, got_ids, dist = index.query(queries)
    got = set(zip(q.tolist(), got_ids.tolist(), dist.tolist()))
    want = set()
    for i, x in enumerate(queries.tolist()):
        d = [bin(x ^ s).count("1") for s in stored.tolist()]
        want |= {(i, int(ids[j]), dj) for j, dj in enumerate(d) if dj <= 4}
    assert got == want
    a, b, d = index.all_pairs(3)
    pairs = set(zip(a.tolist(), b.tolist()))
    assert all(x < 3 + 1 for x in d.tolist())
    assert (1000, 1000 + 5000) in pairs or bin(int(stored[0] ^ stored[5000])).count("1") > 3
    with pytest.raises(ValueError, match="already"):
        index.add([1000], [5])
    with pytest.raises(ValueError, match="beyond"):
        index.query(queries, k=5)


def dedup_cli(tmp_path, corpus_path):
    out = tmp_path / "cli"
    subprocess.run(
        [cli(), "dedup", "--jsonl", str(corpus_path), "--out", str(out), "--store", str(out / "s.db"), "-q"],
        check=True,
    )
    kept = {json.loads(l)["id"] for l in open(out / "kept.jsonl", encoding="utf-8")}
    merges = [json.loads(l) for l in open(out / "merges.jsonl", encoding="utf-8")]
    return kept, merges, out / "s.db"


def logged(merges):
    """Merge-log entries as comparable tuples."""
    return sorted((m["kept"], m["merged"], m["rule"], m["distance"], round(m["jaccard"], 9), m["matched"]) for m in merges)


def test_decisions_equal_neardup_dedup_on_the_same_input(tmp_path, corpus):
    kept, merges, _ = dedup_cli(tmp_path, CORPUS)
    assert len(merges) > 100  # the corpus is full of republished licences
    with neardup.Deduper(tmp_path / "py.db") as d:
        table = d.process(corpus)
        assert logged(d.merges()) == logged(merges)
        survivors = {c["survivor"] for c in d.clusters()}
    rows = table.to_pylist()
    assert [r["position"] for r in rows] == list(range(len(corpus)))
    # Kept now: kept when decided, unless a later record displaced it.
    accepted = {r["id"] for r in rows if r["decision"] != "rejected"}
    assert accepted - {m["merged"] for m in merges} == kept
    displaced = {r["displaced"] for r in rows if r["displaced"]}
    assert displaced <= {m["merged"] for m in merges}
    assert survivors <= kept
    merged_when_decided = {r["id"]: r["survivor"] for r in rows if r["decision"] == "merged"}
    assert {(m["merged"], m["kept"]) for m in merges} >= set(merged_when_decided.items())
    # Arrow in, the same out.
    with neardup.Deduper() as d:
        assert d.process(pa.Table.from_pylist(corpus)).equals(table)


def test_a_store_opens_in_the_cli_and_the_other_way_round(tmp_path, corpus):
    _, merges, cli_store = dedup_cli(tmp_path, CORPUS)
    # The CLI's store in Python: every record is already stored.
    with neardup.Deduper(cli_store) as d:
        assert len(d) == len(corpus)
        assert {r["decision"] for r in d.process(corpus[:20]).to_pylist()} == {"already_stored"}
        assert logged(d.merges()) == logged(merges)
    with pytest.raises(neardup.ProfileMismatch):
        neardup.Deduper(cli_store, profile="blake2b")
    # Python's store in the CLI.
    store = tmp_path / "py.db"
    with neardup.Deduper(store) as d:
        d.process(corpus[:50])
    text = corpus[3]["body_text"]
    found = subprocess.run(
        [cli(), "query", "--store", str(store), "--text", text, "--json"],
        capture_output=True, text=True,
    )
    assert found.returncode == 0, found.stderr
    assert corpus[3]["id"] in found.stdout


def test_rejects_name_the_record_and_strict_raises():
    recs = [
        {"id": "a", "text": "one two three four five six seven eight"},
        {"id": "b", "text": None},
        {"id": "c", "text": b"bytes"},
        {"id": "d", "text": "one two three four five six seven eight", "first_seen": "yesterday"},
        {"text": "nine ten eleven twelve thirteen fourteen"},
        {"id": "a", "text": "a different text with other words entirely here"},
    ]
    with neardup.Deduper() as d:
        rows = d.process(recs).to_pylist()
    decisions = [(r["id"], r["decision"]) for r in rows]
    assert decisions[0] == ("a", "kept")
    assert rows[1]["decision"] == "rejected" and "records[1]" in rows[1]["reason"]
    assert rows[2]["decision"] == "rejected" and "bytes" in rows[2]["reason"]
    assert rows[3]["decision"] == "rejected" and "first_seen" in rows[3]["reason"]
    assert rows[4]["id"] == "5" and rows[4]["decision"] == "kept"
    assert rows[5]["decision"] == "rejected" and "duplicate id" in rows[5]["reason"]
    with neardup.Deduper() as d:
        with pytest.raises(ValueError, match=r"records\[1\]"):
            d.process(recs, strict=True)
        assert len(d) == 0  # checked before anything is stored
        d.process(recs[:1])
        with pytest.raises(ValueError, match="duplicate id"):
            d.process(recs[5:], strict=True)
    with pytest.raises(TypeError, match=r"records\[0\] is str, not a dict"):
        neardup.Deduper().process(["not a record"])


def test_pandas_in_decisions_out(corpus):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(corpus[:60])
    with neardup.Deduper() as d:
        out = d.process(df).to_pandas()
    assert len(out) == 60 and set(out["decision"]) <= {"kept", "merged"}


def test_query_erase_clusters(corpus):
    with neardup.Deduper() as d:
        d.process(corpus)
        clusters = d.clusters()
        big = max(clusters, key=lambda c: len(c["members"]))
        member = big["members"][1]
        text = next(r["body_text"] for r in corpus if r["id"] == member)
        hits = d.query(text)
        assert member in {h[0] for h in hits}
        assert all(j >= 0.8 for _, _, j in hits)
        assert d.erase([member, "no-such-id"]) == [member]
        assert member not in {h[0] for h in d.query(text)}
    with pytest.raises(RuntimeError, match="closed"):
        d.query("anything")


def test_calls_from_several_threads(corpus):
    texts = [r["body_text"] for r in corpus]
    f = neardup.Fingerprinter()
    want = f.fingerprint(texts)
    d = neardup.Deduper()
    errors = []

    def work(i):
        try:
            assert np.array_equal(f.fingerprint(texts), want)
            d.process([{"id": f"{i}-{r['id']}", "text": r["body_text"]} for r in corpus[:40]])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(d) == 160


def test_boilerplate_learned_from_the_records_leaves_a_template_out():
    def words(seed, n):
        import random
        r = random.Random(seed)
        return " ".join(f"w{r.randrange(50000)}" for _ in range(n))

    template = words(1, 400)
    pages = [
        {"id": f"p{i}", "url": f"https://site.example/{i}", "text": f"{template} {words(100 + i, 40)}"}
        for i in range(30)
    ]
    with neardup.Deduper() as d:
        merged = [r for r in d.process(pages).to_pylist() if r["decision"] == "merged"]
    assert merged  # the template alone makes the pages near-duplicates
    with neardup.Deduper(boilerplate=True, boilerplate_min_pages=10) as d:
        rows = d.process(pages).to_pylist()
    assert [r["decision"] for r in rows] == ["kept"] * 30


def test_block_participants_are_every_record_verification_needs():
    """The first round of the Spark job's verification: over narrow block rows, the
    records a group needs. Block rows of just those records give the same verified pairs
    (and candidates) as every record's rows, with pairs of two old records left out alike;
    on a real recrawl they are a fraction of the rows."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_corpus import real_records, recrawl

    base = real_records(3000)
    lines = [json.dumps(r) for r in base + recrawl(base)]
    analysed = neardup.analyze_batch(pa.RecordBatch.from_arrays([pa.array(lines)], names=["value"]), json="value", now_ms=0)
    ok = analysed.filter(pa.compute.is_null(analysed.column("reason")))
    old = pa.array([i % 3 == 0 for i in range(ok.num_rows)])
    records = pa.RecordBatch.from_arrays(
        [ok.column("doc"), ok.column("fp"), ok.column("fp_hi"), ok.column("set"), old],
        names=["doc", "fp", "fp_hi", "set", "old"],
    )
    sizes = pa.compute.divide(pa.compute.binary_length(records.column("set")), 4)
    narrow = pa.RecordBatch.from_arrays(
        [records.column("doc"), records.column("fp"), records.column("fp_hi"), sizes.cast(pa.int32()), old],
        names=["doc", "fp", "fp_hi", "size", "old"],
    )
    for k in (3, 16):
        every = neardup.pigeonhole_blocks(records, bits=64, k=k)
        want = neardup.block_pairs(every, bits=64, k=k, min_jaccard=0.8)
        needed = neardup.block_participants(
            neardup.pigeonhole_blocks(narrow, bits=64, k=k), bits=64, k=k, min_jaccard=0.8
        )
        keys = set(zip(*(needed.column(c).to_pylist() for c in ("block", "value", "doc"))))
        assert len(keys) == needed.num_rows
        rows = every.filter(
            pa.array([key in keys for key in zip(*(every.column(c).to_pylist() for c in ("block", "value", "doc")))])
        )
        got = neardup.block_pairs(rows, bits=64, k=k, min_jaccard=0.8)
        pairs = lambda t: sorted(zip(*(t.column(c).to_pylist() for c in ("a", "b", "distance", "jaccard"))))
        assert pairs(got) == pairs(want)
        assert len(pairs(want)) > 100
        assert needed.schema.metadata[b"candidates"] == want.schema.metadata[b"candidates"]
        assert rows.num_rows < every.num_rows / 3, (k, rows.num_rows, every.num_rows)
    with pytest.raises(ValueError, match="size"):
        neardup.block_participants(every, bits=64, k=16, min_jaccard=0.8)
    with pytest.raises(ValueError, match="min_jaccard"):
        neardup.block_participants(neardup.pigeonhole_blocks(narrow, bits=64, k=3), bits=64, k=3, min_jaccard=1.5)


@pytest.mark.parametrize("bits,k", [(64, 3), (64, 16), (128, 6), (128, 28)])
def test_a_large_group_is_joined_with_the_pairs_a_scan_finds(bits, k):
    """A group of `join_from` rows or more is searched by the all-pairs join (at 128 bits,
    of each half at k // 2): the same pairs and distances as the scan, near pairs planted
    with their differing bits in one half, the other or split between them."""
    import random

    rng = random.Random(bits + k)
    width = bits // (k + 1)  # block 0's bits, shared by every row: one group
    free = list(range(width, bits))
    fps = []
    for _ in range(1500):
        base = rng.getrandbits(bits) >> width << width
        fps.append(base)
        for flips in (rng.sample(free, rng.randint(0, k)), [b for b in free if b >= bits // 2][:k], free[:k]):
            near = base
            for b in flips:
                near ^= 1 << b
            fps.append(near)
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array(range(len(fps)), pa.int64()),
            pa.array([signed(f & ((1 << 64) - 1)) for f in fps], pa.int64()),
            pa.array([signed(f >> 64) for f in fps], pa.int64()),
        ],
        names=["doc", "fp", "fp_hi"],
    )
    rows = neardup.pigeonhole_blocks(batch, bits=bits, k=k)
    rows = rows.filter(pa.compute.equal(rows.column("block"), 0))
    assert len(set(rows.column("value").to_pylist())) == 1
    scanned = neardup.block_pairs(rows, bits=bits, k=k, join_from=10**9)
    joined = neardup.block_pairs(rows, bits=bits, k=k, join_from=0)
    pairs = lambda t: sorted(zip(*(t.column(c).to_pylist() for c in ("a", "b", "distance"))))
    assert len(pairs(scanned)) >= 4500
    assert pairs(joined) == pairs(scanned)
    assert joined.schema.metadata == scanned.schema.metadata


def test_verification_in_groups_scores_every_pair_the_sizes_allow():
    """`block_pairs` with `min_jaccard` compares a group's rows only with those whose set
    sizes allow the threshold (scanned in size order): the pairs equal every pair within k
    verified here in Python, on a real recrawl, by the scan, by the all-pairs join and
    across the two sides of tiled rows."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_corpus import real_records, recrawl

    base = real_records(1500)
    lines = [json.dumps(r) for r in base + recrawl(base)]
    analysed = neardup.analyze_batch(pa.RecordBatch.from_arrays([pa.array(lines)], names=["value"]), json="value", now_ms=0)
    ok = analysed.filter(pa.compute.is_null(analysed.column("reason")))
    sets = {d: frozenset(np.frombuffer(s, dtype="<u4").tolist()) for d, s in zip(ok.column("doc").to_pylist(), ok.column("set").to_pylist())}
    records = pa.RecordBatch.from_arrays(
        [ok.column("doc"), ok.column("fp"), ok.column("fp_hi"), ok.column("set")],
        names=["doc", "fp", "fp_hi", "set"],
    )
    k, t = 16, 0.8
    every = neardup.pigeonhole_blocks(records, bits=64, k=k)
    side = pa.compute.cast(pa.compute.bit_wise_and(every.column("doc"), pa.scalar(1, pa.int64())), pa.int8())
    tiled = every.append_column("ta", pa.array([0] * every.num_rows, pa.int32()))
    tiled = tiled.append_column("tb", pa.array([1] * every.num_rows, pa.int32())).append_column("side", side)
    pairs = lambda table, c: sorted(zip(*(table.column(n).to_pylist() for n in c)))

    def jaccard(a, b):
        x, y = sets[a], sets[b]
        return len(x & y) / len(x | y) if x | y else 1.0

    for rows, join_from in ((every, 10**9), (every, 0), (tiled, 10**9)):
        within = pairs(neardup.block_pairs(rows, bits=64, k=k, join_from=join_from), ("a", "b", "distance"))
        want = [(a, b, d) for a, b, d in within if jaccard(a, b) >= t]
        got = neardup.block_pairs(rows, bits=64, k=k, min_jaccard=t, join_from=join_from)
        assert pairs(got, ("a", "b", "distance")) == want
        assert len(want) > 100
        for a, b, j in pairs(got, ("a", "b", "jaccard")):
            assert j == pytest.approx(jaccard(a, b))
        # Candidates count the pairs the sizes allow: fewer than every pair within k.
        assert len(want) <= int(got.schema.metadata[b"candidates"]) < len(within)


def test_kept_json_lines_keep_the_records_members_as_written():
    lines = pa.array(
        [
            '{"id": "a", "text": "caf\\u00e9", "n": 1.50, "first_seen": "old"}',
            '  {"id":"b","text":"plain"}  ',
            "{}",
        ]
    )
    out = neardup.annotate_json(
        lines,
        pa.array([["https://x/a", "https://y/a"], [], []], pa.list_(pa.string())),
        pa.array([1767225600000, 1767225600500, 0], pa.int64()),
        pa.array([2, 1, 1], pa.int64()),
        pa.array(["00ff", "0a0b", "0000"]),
        pa.array(["en", None, None]),
    ).to_pylist()
    # The record's own members byte for byte (escapes, number forms, spacing), without its
    # own `first_seen`, then the fields kept records get.
    assert out[0] == (
        '{"id": "a","text": "caf\\u00e9","n": 1.50,"source_urls":["https://x/a","https://y/a"],'
        '"first_seen":"2026-01-01T00:00:00Z","cluster_size":2,"neardup_fingerprint":"00ff",'
        '"neardup_language":"en"}'
    )
    assert out[1] == (
        '{"id":"b","text":"plain","source_urls":[],"first_seen":"2026-01-01T00:00:00.500Z",'
        '"cluster_size":1,"neardup_fingerprint":"0a0b"}'
    )
    assert json.loads(out[2])["cluster_size"] == 1 and out[2].startswith('{"source_urls"')
    with pytest.raises(ValueError, match="row 1: .*JSON object, not an array"):
        neardup.annotate_json(
            pa.array(["{}", "[1]"]),
            pa.array([[], []], pa.list_(pa.string())),
            pa.array([0, 0], pa.int64()),
            pa.array([1, 1], pa.int64()),
            pa.array(["0", "0"]),
            pa.array([None, None], pa.string()),
        )
