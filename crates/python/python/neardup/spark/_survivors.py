"""Stage 5: every cluster's survivor (earliest first seen, then smallest id, every source URL
kept) and what follows from the clusters: the kept records' cluster columns, the clusters,
the merges (each merged record's best verified match) and the pairs by id.

Two ways to the same rows: `on_cluster`, aggregations over every record, and `on_driver`,
Arrow arrays on the driver where the clustered records are few enough to collect (the
singletons, most of a corpus, then never move: the kept records are the input's records but
for the merged ones)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import _stages
from ._options import Options

#: Up to this many verified pairs, and records they cluster, the pairs (about 40 bytes
#: each) and the records' narrow rows (about 200 bytes) are collected and the survivors
#: computed on the driver.
LOCAL_SURVIVORS = 1_000_000

#: Up to this many kept records (new records, where the survivors are placed on the
#: driver), their narrow rows (about 100 bytes each) are broadcast to the input read again
#: for their own columns, which is then not shuffled.
BROADCAST_KEPT = 1_000_000


@dataclass
class Placement:
    """Each record's place in its cluster, as the outputs need it."""

    #: The kept records' rows of the input read again (`_stages.located`), joined to
    #: their narrow columns: `_nd_doc`, `_nd_was` (the row's hash), `_nd_language`,
    #: `_nd_source_urls`, `_nd_first_ms`, `_nd_size`, `_nd_hex`.
    keep: Callable[[DataFrame], DataFrame]
    #: The outputs of the same names (see `Result`).
    clusters: DataFrame
    merges: DataFrame
    pairs: DataFrame
    #: `kept`, `merged`, `displaced` (survivors of the previous run displaced) and
    #: `clusters` (clusters of more than one record with a new member).
    tally: Dict[str, int]
    #: Where the clusters were computed: "driver" or "cluster".
    on: str


def _rfc3339(ms) -> "F.Column":
    """Milliseconds as the CLI writes a time: RFC 3339 in UTC, milliseconds when not zero."""
    ts = F.timestamp_millis(ms)
    return F.when(ms.isNull(), F.lit(None)).when(
        ms % 1000 == 0, F.date_format(ts, "yyyy-MM-dd'T'HH:mm:ss'Z'")
    ).otherwise(F.date_format(ts, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"))


def _hex(fp, fp_hi, bits: int) -> "F.Column":
    """The fingerprint in hex, as the CLI prints it."""
    lo = F.lower(F.lpad(F.hex(fp), 16, "0"))
    if bits == 64:
        return lo
    return F.concat(F.lower(F.lpad(F.hex(fp_hi), 16, "0")), lo)


def _kept(found: DataFrame, kept_count: int) -> DataFrame:
    if kept_count <= BROADCAST_KEPT:
        # The planner cannot tell from a join of cached stages that this side is small.
        return F.broadcast(found)
    return found


def on_cluster(
    everything: DataFrame,
    fresh: DataFrame,
    edges: DataFrame,
    roots: DataFrame,
    state: Optional[DataFrame],
    opts: Options,
    at: str,
    persist,
) -> Placement:
    """The clusters by aggregations over every record (`everything`, new and old), their
    components' `roots` and verified `edges`; `fresh` is the new records as the analysis
    made them."""
    narrow = everything.select("doc", "id", "url", "first_seen", "fp", "fp_hi", "old")
    assigned = narrow.join(roots, "doc", "left").withColumn("root", F.coalesce(F.col("root"), F.col("doc")))
    if state is not None:
        was = state.select("doc", (F.col("doc") == F.col("root")).alias("was_survivor"))
        assigned = assigned.join(was, "doc", "left")
    else:
        assigned = assigned.withColumn("was_survivor", F.lit(None).cast("boolean"))
    assigned = persist(assigned.withColumn("was_survivor", F.coalesce(F.col("was_survivor"), F.lit(False))))
    comp = persist(
        assigned.groupBy("root").agg(
            # The survivor: earliest first seen, then smallest id (doc, old, the
            # fingerprint and was_survivor ride along; doc is unique, so they never decide).
            F.min(F.struct("first_seen", "id", "doc", "old", "fp", "fp_hi", "was_survivor")).alias("s"),
            F.count(F.lit(1)).alias("size"),
            F.sort_array(F.collect_list(F.struct("first_seen", "id", "url"))).alias("m"),
            # Members new in this run, and old ones that survived the previous run.
            F.sum((~F.col("old")).cast("long")).alias("new"),
            F.sum((F.col("old") & F.col("was_survivor")).cast("long")).alias("was"),
        )
    )
    members = persist(
        assigned.join(comp.select("root", F.col("s.doc").alias("s_doc"), F.col("s.id").alias("s_id")), "root")
        .withColumn("survivor", F.col("doc") == F.col("s_doc"))
        .drop("s_doc")
    )
    # One row per cluster: its survivor is kept where new; its other new members are
    # merged; its old members that survived the previous run, but for the survivor, are
    # displaced.
    survivor_new = (~F.col("s.old")).cast("long")
    row = comp.agg(
        F.sum(survivor_new).alias("kept"),
        F.sum(F.col("new") - survivor_new).alias("merged"),
        F.sum(F.col("was") - (F.col("s.old") & F.col("s.was_survivor")).cast("long")).alias("displaced"),
        F.count(F.when((F.col("size") > 1) & (F.col("new") > 0), 1)).alias("clusters"),
    ).first()
    tally = {name: int(row[name] or 0) for name in ("kept", "merged", "displaced", "clusters")}

    urls = F.filter(F.transform("m", lambda x: x["url"]), lambda u: u.isNotNull())
    survivors = comp.filter(~F.col("s.old")).select(
        F.col("s.doc").alias("_nd_doc"),
        urls.alias("_nd_source_urls"),
        F.col("s.first_seen").alias("_nd_first_ms"),
        F.col("size").alias("_nd_size"),
        _hex(F.col("s.fp"), F.col("s.fp_hi"), opts.bits).alias("_nd_hex"),
    )
    found = fresh.select("_nd_doc", _stages.ROW, F.col(_stages.CHECK).alias("_nd_was"), "_nd_language")
    kept = _kept(found.join(survivors, "_nd_doc"), tally["kept"])

    # Each merged record's best verified match: an exact copy first, then the highest
    # Jaccard, the smallest distance, the smallest document id.
    directed = edges.select(F.col("a").alias("doc"), F.col("b").alias("other"), "rule", "distance", "jaccard").unionByName(
        edges.select(F.col("b").alias("doc"), F.col("a").alias("other"), "rule", "distance", "jaccard")
    )
    best = directed.groupBy("doc").agg(
        F.max_by(
            F.struct("other", "rule", "distance", "jaccard"),
            F.struct(
                (F.col("rule") == "exact").cast("int"),
                F.coalesce(F.col("jaccard"), F.lit(-1.0)),
                -F.coalesce(F.col("distance"), F.lit(1 << 20)),
                -F.col("other"),
            ),
        ).alias("e")
    )
    ids = members.select(F.col("doc").alias("e_doc"), F.col("id").alias("matched"))
    merged = members.filter(~F.col("survivor") & (~F.col("old") | F.col("was_survivor")))
    merges = (
        merged.join(best, "doc", "left")
        .join(ids, F.col("e.other") == F.col("e_doc"), "left")
        .select(
            F.col("s_id").alias("kept"),
            F.col("id").alias("merged"),
            "fp",
            "fp_hi",
            "e.rule",
            "e.distance",
            "e.jaccard",
            "matched",
            "url",
            F.col("old").alias("displaced"),
        )
    )
    clusters = comp.filter((F.col("size") > 1) & (F.col("new") > 0)).select(
        F.col("root").alias("cluster"),
        F.col("s.id").alias("survivor"),
        F.col("s.first_seen").alias("first_ms"),
        F.transform("m", lambda x: x["id"]).alias("members"),
        urls.alias("source_urls"),
        "size",
    )
    names = members.select("doc", "id")
    pairs = (
        edges.filter(F.col("rule") != "previous")
        .join(names.select(F.col("doc").alias("a"), F.col("id").alias("a_id")), "a")
        .join(names.select(F.col("doc").alias("b"), F.col("id").alias("b_id")), "b")
        .select(F.col("a_id").alias("a"), F.col("b_id").alias("b"), "rule", "distance", "jaccard")
    )
    return Placement(
        keep=lambda source: source.join(kept, _stages.ROW),
        clusters=_clusters_out(clusters),
        merges=_merges_out(merges, opts, at),
        pairs=pairs,
        tally=tally,
        on="cluster",
    )


def on_driver(
    everything: DataFrame,
    fresh: DataFrame,
    fresh_count: int,
    edges: pa.Table,
    roots: DataFrame,
    state: Optional[DataFrame],
    opts: Options,
    at: str,
) -> Placement:
    """The same rows as `on_cluster`, from the verified `edges` collected on the driver,
    their components' `roots` (made there, `_components.on_driver`), and the clustered
    records' narrow rows collected in one job. `fresh_count` is how many new records
    `fresh` holds."""
    spark = everything.sparkSession
    c = _Clustered.collect(everything, roots, state)
    # Each cluster's survivor is kept where new; its other new members are merged; its old
    # members that survived the previous run, but for the survivor, are displaced.
    s_old = c.old[c.starts]
    s_new = (~s_old).astype(np.int64)
    tally = {
        "kept": fresh_count - int((~c.old).sum()) + int(s_new.sum()),
        "merged": int((c.new - s_new).sum()),
        "displaced": int((c.was - (s_old & c.was_survivor[c.starts])).sum()),
        "clusters": int(((c.size > 1) & (c.new > 0)).sum()),
    }
    s = c.rows.take(pa.array(c.starts, pa.int64()))
    clusters = pa.table(
        {
            "cluster": s["root"],
            "survivor": s["id"],
            "first_ms": s["first_seen"],
            "members": pa.ListArray.from_arrays(pa.array(c.offsets, pa.int32()), c.ids),
            "source_urls": c.urls,
            "size": pa.array(c.size, pa.int64()),
        }
    ).filter(pa.array((c.size > 1) & (c.new > 0)))
    return Placement(
        keep=_kept_on_driver(fresh, fresh_count, c, opts),
        clusters=_clusters_out(spark.createDataFrame(clusters, CLUSTERS)),
        merges=_merges_out(spark.createDataFrame(_merges_on_driver(c, edges), MERGES), opts, at),
        pairs=spark.createDataFrame(_pairs_on_driver(c, edges), PAIRS),
        tally=tally,
        on="driver",
    )


def _present(column: str) -> "F.Column":
    """A one-element array of `column`, empty where it is null (a record's own URLs)."""
    return F.filter(F.array(F.col(column)), lambda u: u.isNotNull())


def _clusters_out(clusters: DataFrame) -> DataFrame:
    """The clusters output from rows shaped as `CLUSTERS`."""
    return clusters.select(
        "cluster", "survivor", _rfc3339(F.col("first_ms")).alias("first_seen"), "members", "source_urls", "size"
    )


def _merges_out(merges: DataFrame, opts: Options, at: str) -> DataFrame:
    """The merges output from rows shaped as `MERGES`, logged `at`."""
    return merges.select(
        "kept",
        "merged",
        _hex(F.col("fp"), F.col("fp_hi"), opts.bits).alias("merged_fingerprint"),
        "rule",
        "distance",
        "jaccard",
        "matched",
        _present("url").alias("source_urls"),
        "displaced",
        F.lit(at).alias("at"),
    )


@dataclass
class _Clustered:
    """The clustered records on the driver, in their clusters' order: a cluster's rows
    run from `starts[i]` to `offsets[i + 1]`, its survivor (earliest first seen, then
    smallest id) first."""

    #: `doc`, `id`, `url`, `first_seen`, `fp`, `fp_hi`, `old`, `was_survivor`, `root`.
    rows: pa.Table
    starts: np.ndarray
    offsets: np.ndarray
    size: np.ndarray
    old: np.ndarray
    was_survivor: np.ndarray
    #: Each row's survivor's row.
    survivor_of: np.ndarray
    #: Per cluster: new members, and old ones that survived the previous run.
    new: np.ndarray
    was: np.ndarray
    #: Per cluster: its members' URLs, in order, none null.
    urls: pa.ListArray
    docs: pa.Array
    ids: pa.Array

    @staticmethod
    def collect(everything: DataFrame, roots: DataFrame, state: Optional[DataFrame]) -> "_Clustered":
        roots = F.broadcast(roots)
        narrow = everything.select("doc", "id", "url", "first_seen", "fp", "fp_hi", "old").join(roots, "doc")
        if state is not None:
            was = state.join(roots.select("doc"), "doc").select("doc", (F.col("doc") == F.col("root")).alias("was_survivor"))
            narrow = narrow.join(was, "doc", "left")
        else:
            narrow = narrow.withColumn("was_survivor", F.lit(None).cast("boolean"))
        narrow = narrow.withColumn("was_survivor", F.coalesce(F.col("was_survivor"), F.lit(False)))
        # Ids are unique, so the document id never decides.
        t = narrow.toArrow().sort_by([("root", "ascending"), ("first_seen", "ascending"), ("id", "ascending")])
        starts = _starts(t["root"].to_numpy())
        offsets = np.r_[starts, t.num_rows]
        size = np.diff(offsets)
        old = t["old"].to_numpy(zero_copy_only=False)
        was_survivor = t["was_survivor"].to_numpy(zero_copy_only=False)
        url = _array(t["url"])
        has_url = pc.is_valid(url).to_numpy(zero_copy_only=False)
        url_offsets = np.r_[0, np.cumsum(has_url)][offsets]
        return _Clustered(
            rows=t,
            starts=starts,
            offsets=offsets,
            size=size,
            old=old,
            was_survivor=was_survivor,
            survivor_of=np.repeat(starts, size),
            new=_sums(~old, starts),
            was=_sums(old & was_survivor, starts),
            urls=pa.ListArray.from_arrays(pa.array(url_offsets, pa.int32()), url.filter(pa.array(has_url))),
            docs=_array(t["doc"]),
            ids=_array(t["id"]),
        )

    @property
    def is_survivor(self) -> np.ndarray:
        return self.survivor_of == np.arange(self.rows.num_rows)


def _kept_on_driver(fresh: DataFrame, fresh_count: int, c: _Clustered, opts: Options) -> Callable[[DataFrame], DataFrame]:
    """The kept records: every new record but the merged ones (each clustered record but
    its cluster's survivor); a clustered survivor's cluster columns are its cluster's, a
    singleton's its own. The input read again is joined to the new records' narrow rows
    and to the clustered ones made here, each broadcast on its own, so that neither waits
    for the other."""
    merged = ~c.is_survivor
    cluster_of = np.repeat(np.arange(len(c.starts)), c.size)
    clustered = pa.table(
        {
            "_nd_doc": c.docs,
            "_nd_drop": pa.array(merged),
            "_nd_c_urls": c.urls.take(pa.array(cluster_of, pa.int64(), mask=merged)),
            "_nd_c_size": pa.array(c.size[cluster_of], pa.int64(), mask=merged),
        }
    )
    clustered = F.broadcast(fresh.sparkSession.createDataFrame(clustered, CLUSTERED))
    found = _kept(
        fresh.select(
            "_nd_doc",
            _stages.ROW,
            F.col(_stages.CHECK).alias("_nd_was"),
            "_nd_language",
            _present("_nd_url").alias("_nd_own_urls"),
            F.col("_nd_first_seen").alias("_nd_first_ms"),
            _hex(F.col("_nd_fp"), F.col("_nd_fp_hi"), opts.bits).alias("_nd_hex"),
        ),
        fresh_count,
    )

    def keep(source: DataFrame) -> DataFrame:
        return (
            source.join(found, _stages.ROW)
            .join(clustered, "_nd_doc", "left")
            .filter(~F.coalesce(F.col("_nd_drop"), F.lit(False)))
            .withColumn("_nd_source_urls", F.coalesce(F.col("_nd_c_urls"), F.col("_nd_own_urls")))
            .withColumn("_nd_size", F.coalesce(F.col("_nd_c_size"), F.lit(1).cast("long")))
            .drop("_nd_drop", "_nd_c_urls", "_nd_c_size", "_nd_own_urls")
        )

    return keep


def _merges_on_driver(c: _Clustered, edges: pa.Table) -> pa.Table:
    """One row per merged record (a new one, or an old survivor displaced): its survivor
    and its best verified match, chosen as `on_cluster` chooses it (an exact copy first,
    then the highest Jaccard, the smallest distance, the smallest document id)."""
    directed = pa.table(
        {
            "doc": _array(edges["a"], edges["b"]),
            "other": _array(edges["b"], edges["a"]),
            "rule": _array(edges["rule"], edges["rule"]),
            "distance": _array(edges["distance"], edges["distance"]),
            "jaccard": _array(edges["jaccard"], edges["jaccard"]),
        }
    )
    directed = directed.append_column("exact", pc.equal(directed["rule"], "exact"))
    directed = directed.append_column("j", pc.fill_null(directed["jaccard"], -1.0))
    directed = directed.append_column("d", pc.fill_null(directed["distance"], 1 << 20))
    directed = directed.sort_by(
        [("doc", "ascending"), ("exact", "descending"), ("j", "descending"), ("d", "ascending"), ("other", "ascending")]
    )
    best = directed.take(pa.array(_starts(directed["doc"].to_numpy()), pa.int64()))
    merged = np.flatnonzero(~c.is_survivor & (~c.old | c.was_survivor))
    m = c.rows.take(pa.array(merged, pa.int64()))
    e = best.take(pc.index_in(m["doc"], _array(best["doc"])))
    return pa.table(
        {
            "kept": c.ids.take(pa.array(c.survivor_of[merged], pa.int64())),
            "merged": m["id"],
            "fp": m["fp"],
            "fp_hi": m["fp_hi"],
            "rule": e["rule"],
            "distance": e["distance"],
            "jaccard": e["jaccard"],
            "matched": c.ids.take(pc.index_in(e["other"], c.docs)),
            "url": m["url"],
            "displaced": m["old"],
        }
    )


def _pairs_on_driver(c: _Clustered, edges: pa.Table) -> pa.Table:
    """The verified pairs of this run (not the previous run's links) by id."""
    named = edges.filter(pc.not_equal(pc.fill_null(edges["rule"], ""), "previous"))
    return pa.table(
        {
            "a": c.ids.take(pc.index_in(named["a"], c.docs)),
            "b": c.ids.take(pc.index_in(named["b"], c.docs)),
            "rule": named["rule"],
            "distance": named["distance"],
            "jaccard": named["jaccard"],
        }
    )


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys starts in `sorted_keys`."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def _sums(flags: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How many of `flags` are set in each run that `starts` begins."""
    if len(starts) == 0:
        return np.zeros(0, np.int64)
    return np.add.reduceat(flags.astype(np.int64), starts)


def _array(*columns: Any) -> pa.Array:
    """`columns` (arrays or chunked arrays of one type) one after another, as one array."""
    chunks = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    return pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]


def _schema(*fields: Any) -> T.StructType:
    return T.StructType([T.StructField(name, kind) for name, kind in fields])


ROOTS = _schema(("doc", T.LongType()), ("root", T.LongType()))
CLUSTERED = _schema(
    ("_nd_doc", T.LongType()),
    ("_nd_drop", T.BooleanType()),
    ("_nd_c_urls", T.ArrayType(T.StringType())),
    ("_nd_c_size", T.LongType()),
)
CLUSTERS = _schema(
    ("cluster", T.LongType()),
    ("survivor", T.StringType()),
    ("first_ms", T.LongType()),
    ("members", T.ArrayType(T.StringType())),
    ("source_urls", T.ArrayType(T.StringType())),
    ("size", T.LongType()),
)
MERGES = _schema(
    ("kept", T.StringType()),
    ("merged", T.StringType()),
    ("fp", T.LongType()),
    ("fp_hi", T.LongType()),
    ("rule", T.StringType()),
    ("distance", T.IntegerType()),
    ("jaccard", T.DoubleType()),
    ("matched", T.StringType()),
    ("url", T.StringType()),
    ("displaced", T.BooleanType()),
)
PAIRS = _schema(
    ("a", T.StringType()),
    ("b", T.StringType()),
    ("rule", T.StringType()),
    ("distance", T.IntegerType()),
    ("jaccard", T.DoubleType()),
)
