"""The job's stages before clustering, each a Spark stage over Arrow batches on the Rust core:
analysis, unique ids, the exact tier, and pigeonhole candidates verified by exact Jaccard."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Dict, List, Optional, Tuple

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ._options import Options
from ._worker import executor

#: The analysis's columns, as `neardup.analyze_batch` makes them (prefixed `_nd_` beside the
#: input's own columns).
ANALYSIS_FIELDS = [
    ("doc", T.LongType()),
    ("id", T.StringType()),
    ("url", T.StringType()),
    ("first_seen", T.LongType()),
    ("fp", T.LongType()),
    ("fp_hi", T.LongType()),
    ("content", T.BinaryType()),
    ("set", T.BinaryType()),
    ("tokens", T.IntegerType()),
    ("language", T.StringType()),
    ("reason", T.StringType()),
]

#: What every later stage reads of a record (the input's own columns are only read back for
#: the kept records).
RECORD = ["doc", "id", "url", "first_seen", "fp", "fp_hi", "content", "set", "language"]


#: Each input row's locator, the same on every read of a deterministic input: its position
#: (partition and offset, as `monotonically_increasing_id` numbers rows) and a hash of the
#: columns the analysis reads. Never an identity of the record (that is its document id):
#: only what finds the row again for the kept output.
ROW, CHECK = "_nd_row", "_nd_check"

#: The rejected JSON lines' first characters, for the rejects' `input`.
INPUT_CHARS = 500


def located(df: DataFrame, opts: Options, json_column: Optional[str]) -> DataFrame:
    """`df` with each row's `ROW` and `CHECK` (see there). The analysis reads `df` once
    through this; the kept records' own columns are read again through it and joined by
    `ROW`, so the records' text never rides through the job's persisted stages."""
    read = analysed_columns(df, opts, json_column)
    return df.withColumn(ROW, F.monotonically_increasing_id()).withColumn(CHECK, F.xxhash64(*read))


def analysed_columns(df: DataFrame, opts: Options, json_column: Optional[str]) -> List[str]:
    """The columns of `df` the analysis reads: `json_column`, or the id, the text fields,
    the URL and the first-seen time (those present)."""
    if json_column is not None:
        return [json_column]
    text = text_columns(df, opts, None)
    present = set(df.columns)
    return [opts.id] + text + [c for c in (opts.url, opts.first_seen) if c in present and c not in text]


def analyze(
    source: DataFrame, opts: Options, json_column: Optional[str], now_ms: int, boilerplate: Any = None
) -> DataFrame:
    """Stage 1: each record of `source` (`located`) normalised, shingled and fingerprinted
    in the executors (`mapInArrow`), with its `ROW` and `CHECK`; only the columns the
    analysis reads go to the executors' Python, and none of them come back but a rejected
    JSON line's first `INPUT_CHARS` characters (`_nd_input`, with `json_column`). A record
    that cannot be used gets `_nd_reason`. `boilerplate`: a broadcast of the shingle hashes
    every record leaves out (bytes, as `learn_boilerplate` unions them), or None."""
    fields = [T.StructField(ROW, T.LongType(), False), T.StructField(CHECK, T.LongType(), False)]
    fields += [T.StructField("_nd_" + name, t, True) for name, t in ANALYSIS_FIELDS]
    if json_column is not None:
        fields.append(T.StructField("_nd_input", T.StringType(), True))
    kwargs = opts.analysis_kwargs()
    kwargs["text"] = text_columns(source, opts, json_column)

    def run(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        import neardup

        furniture = None if boilerplate is None else boilerplate.value
        for batch in batches:
            out = neardup.analyze_batch(
                batch, json=json_column, now_ms=now_ms, boilerplate=furniture, threads=1, **kwargs
            )
            columns = [batch.column(ROW), batch.column(CHECK)] + list(out.columns)
            if json_column is not None:
                start = pc.utf8_slice_codeunits(batch.column(json_column), 0, INPUT_CHARS)
                columns.append(pc.if_else(out.column("reason").is_valid(), start, pa.scalar(None, pa.string())))
            yield pa.RecordBatch.from_arrays(columns, names=names)

    names = [f.name for f in fields]
    read = analysed_columns(source, opts, json_column)
    return source.select(*read, ROW, CHECK).mapInArrow(executor(run), T.StructType(fields))


def text_columns(df: DataFrame, opts: Options, json_column: Optional[str]) -> List[str]:
    """The text fields a record is read from: with `json_column`, the options'; else the
    columns of them `df` has, checked with the id's, the URL's and the time's types before
    any task runs."""
    if json_column is not None:
        return list(opts.text_fields)
    present = set(df.columns)
    if opts.id not in present:
        raise ValueError(f"no column {opts.id!r} (the record id): pass id=NAME")
    if opts.text is not None:
        absent = [n for n in opts.text if n not in present]
        if absent:
            raise ValueError(f"no column {absent[0]!r} (a text field)")
        text = list(opts.text)
    else:
        text = [n for n in opts.text_fields if n in present]
        if not text:
            raise ValueError(
                "no text column: none of "
                + ", ".join(repr(n) for n in opts.text_fields)
                + " (pass text=NAME)"
            )
    _check_types(df, [opts.id, opts.url] + text, opts.first_seen)
    return text


#: What `learn_boilerplate` learns: one row per host with enough pages.
LEARNED = T.StructType(
    [
        T.StructField("host", T.StringType()),
        T.StructField("pages", T.LongType()),
        T.StructField("shingles", T.BinaryType()),
    ]
)


def learn_boilerplate(df: DataFrame, opts: Options, json_column: Optional[str]) -> DataFrame:
    """Stage 0 (with `boilerplate`): each host's boilerplate, learned as the CLI learns it.
    Records are keyed by host and document id in the executors, shuffled so that each
    host's pages are in one partition in document-id order, and counted there by the
    library's learner (`neardup.BoilerplateLearner`): its first `boilerplate_sample_pages`
    pages shingled and counted. Rows: `host`, `pages`, `shingles` (8-byte hashes)."""
    text = text_columns(df, opts, json_column)
    keys = dict(json=json_column, id=opts.id, url=opts.url)
    learner = dict(
        opts.boilerplate_learning(),
        json=json_column,
        id=opts.id,
        text=text,
        url=opts.url,
        first_seen=opts.first_seen,
        threads=1,
        **opts._profile_kwargs(),
    )
    hosted = T.StructType(
        list(df.schema.fields)
        + [T.StructField("_nd_host", T.StringType(), True), T.StructField("_nd_doc", T.LongType(), True)]
    )

    def with_hosts(batches):
        import neardup

        for batch in batches:
            yield neardup.with_hosts(batch, **keys)

    def learn(batches):
        import neardup

        host_learner = neardup.BoilerplateLearner(**learner)
        for batch in batches:
            host_learner.add(batch)
        yield host_learner.finish()

    return (
        df.mapInArrow(executor(with_hosts), hosted)
        .filter(F.col("_nd_host").isNotNull())
        .repartition("_nd_host")
        .sortWithinPartitions("_nd_host", "_nd_doc")
        .mapInArrow(executor(learn), LEARNED)
    )


def _check_types(df: DataFrame, strings: List[str], time: str) -> None:
    """Columns of the wrong type, named before any task runs: ids, URLs and texts are
    strings, the first-seen time a string (RFC 3339) or a timestamp."""
    types = {f.name: f.dataType for f in df.schema.fields}
    for name in strings:
        if name in types and not isinstance(types[name], T.StringType):
            raise TypeError(f"column {name!r} is {types[name].simpleString()}, not string")
    if time in types and not isinstance(types[time], (T.StringType, T.TimestampType, T.TimestampNTZType)):
        raise TypeError(f"column {time!r} is {types[time].simpleString()}, not a string or timestamp")


def unique_ids(
    analysed: DataFrame, persist: Callable[[DataFrame], DataFrame], repeated: bool
) -> Tuple[DataFrame, DataFrame, Optional[DataFrame]]:
    """One record per id: (records, the analysis's rejects, the rejected repeats or None
    where no id repeats). Of several records with one id, the earliest
    first seen (then the smallest content hash) is kept; the others are rejected, with the
    CLI's words where the texts differ. Two ids whose 64-bit document ids collide are
    rejected the same way (about one pair in 2^64, a 3% chance over 10^9 records).

    `repeated` says whether any document id repeats (the caller counts the usable records
    and their distinct document ids in the pass that builds `analysed`). Only records whose
    id repeats are ranked, so a corpus of unique ids (the usual case) never moves its
    records for this check: its records are a filter of `analysed` (persisted by the
    caller), and only ranked records are persisted again (with `persist`)."""
    ok = analysed.filter(F.col("_nd_reason").isNull())
    bad = analysed.filter(F.col("_nd_reason").isNotNull())
    if not repeated:
        return ok, bad, None
    twice = ok.groupBy("_nd_doc").count().filter(F.col("count") > 1).select("_nd_doc")
    flagged = ok.join(twice.withColumn("_nd_repeated", F.lit(True)), "_nd_doc", "left")
    single = flagged.filter(F.col("_nd_repeated").isNull()).drop("_nd_repeated")
    multi = flagged.filter(F.col("_nd_repeated")).drop("_nd_repeated")
    order = Window.partitionBy("_nd_doc").orderBy("_nd_first_seen", "_nd_content", "_nd_id")
    ranked = (
        multi.withColumn("_nd_rank", F.row_number().over(order))
        .withColumn("_nd_first_id", F.first("_nd_id").over(order))
        .withColumn("_nd_first_content", F.first("_nd_content").over(order))
    )
    helpers = ("_nd_rank", "_nd_first_id", "_nd_first_content")
    records = persist(single.unionByName(ranked.filter(F.col("_nd_rank") == 1).drop(*helpers)))
    reason = (
        F.when(
            F.col("_nd_id") != F.col("_nd_first_id"),
            F.concat(
                F.lit("document id collision: ids "),
                F.to_json(F.array("_nd_first_id", "_nd_id")),
                F.lit(" hash to one 64-bit id; rename one"),
            ),
        )
        .when(
            F.col("_nd_content") == F.col("_nd_first_content"),
            F.concat(F.lit("duplicate id: "), F.to_json(F.array("_nd_id")), F.lit(" appears again with the same text")),
        )
        .otherwise(
            F.concat(
                F.lit("duplicate id with different text: "),
                F.to_json(F.array("_nd_id")),
                F.lit(" is already taken by a record with another text (ids must be unique)"),
            )
        )
    )
    dupes = ranked.filter(F.col("_nd_rank") > 1).withColumn("_nd_reason", reason)
    return records, bad, dupes.drop(*helpers)


def with_input(rejects: DataFrame, source: DataFrame, json_column: Optional[str]) -> DataFrame:
    """Records rejected after the analysis (repeated ids, ids a previous run stored) with
    their JSON line's first `INPUT_CHARS` characters as `_nd_input`, read again from
    `source` (`located`) by `ROW`; without `json_column`, as they are."""
    if json_column is None:
        return rejects
    lines = source.select(ROW, F.substring(F.col(json_column), 1, INPUT_CHARS).alias("_nd_input"))
    return rejects.drop("_nd_input").join(lines, ROW, "left")


def exact_tier(records: DataFrame, persist: Callable[[DataFrame], DataFrame]) -> Tuple[DataFrame, DataFrame]:
    """Stage 1b: records of one content hash collapse onto one representative (the earliest
    first seen, then the smallest id), which alone goes on to the candidate search:
    (representatives, exact edges `a` -> `b` with `rule` "exact").

    One aggregation over narrow rows gives both: each content hash's smallest (first seen,
    id) row is its representative, with what the search reads (`doc`, `fp`, `fp_hi`,
    `size` the set's length, `old`) and how many records share the hash; it is persisted
    (with `persist`), and the copies of the hashes held more than once are joined to their
    representative from there, not from a second aggregation. The sets stay in `records`:
    the candidate search reads them only for the records it verifies."""
    size = (F.length("set") / 4).cast("int").alias("size")
    narrow = records.select("doc", "content", "first_seen", "id", "fp", "fp_hi", size, "old")
    groups = persist(
        narrow.groupBy("content")
        .agg(
            # doc is unique, so the fields after it never decide.
            F.min(F.struct("first_seen", "id", "doc", "fp", "fp_hi", "size", "old")).alias("r"),
            F.count(F.lit(1)).alias("n"),
        )
        .select("content", "n", "r.doc", "r.fp", "r.fp_hi", "r.size", "r.old")
    )
    reps = groups.select("doc", "fp", "fp_hi", "size", "old")
    copied = groups.filter(F.col("n") > 1).select("content", F.col("doc").alias("rep"))
    edges = (
        narrow.select("doc", "content")
        .join(copied, "content")
        .filter(F.col("doc") != F.col("rep"))
        .select(
            F.col("doc").alias("a"),
            F.col("rep").alias("b"),
            F.lit("exact").alias("rule"),
            F.lit(0).cast("int").alias("distance"),
            F.lit(1.0).alias("jaccard"),
        )
    )
    return reps, edges


CANDIDATES = T.StructType(
    [
        T.StructField("a", T.LongType()),
        T.StructField("b", T.LongType()),
        T.StructField("distance", T.IntegerType()),
    ]
)

VERIFIED = T.StructType(
    [
        T.StructField("a", T.LongType()),
        T.StructField("b", T.LongType()),
        T.StructField("distance", T.IntegerType()),
        T.StructField("jaccard", T.DoubleType()),
    ]
)


def block_rows(df: DataFrame, bits: int, k: int) -> DataFrame:
    """`df` (with `fp`, `fp_hi`) exploded into its `k + 1` pigeonhole block rows: `block`
    and `value` before `df`'s columns, the values `neardup.pigeonhole_blocks` gives. Built
    in the JVM from the two fingerprint columns, so a record's wide columns (its set) are
    copied there, not sent through Python once and back k + 1 times."""
    count = k + 1
    blocks = [
        F.struct(F.lit(j).alias("block"), _block_value(bits, j * bits // count, (j + 1) * bits // count).alias("value"))
        for j in range(count)
    ]
    return df.select(F.inline(F.array(*blocks)), *df.columns)


def _block_value(bits: int, start: int, end: int) -> "F.Column":
    """Bits `start`..`end` of the fingerprint (`fp` its low 64 bits, `fp_hi` the high ones)
    as one long, shifted down: Rust's `Blocks::value`. A block wider than 64 bits (k = 0
    over 128) is hashed instead of folded: only equality of values matters to the search."""
    width = end - start
    if width > 64:
        return F.xxhash64("fp", "fp_hi")
    lo, hi = F.col("fp"), F.col("fp_hi")
    if end <= 64:
        v = F.shiftrightunsigned(lo, start) if start else lo
    elif start >= 64:
        v = F.shiftrightunsigned(hi, start - 64) if start > 64 else hi
    else:
        v = F.shiftrightunsigned(lo, start).bitwiseOR(F.shiftleft(hi, 64 - start))
    if width < 64:
        v = v.bitwiseAND(F.lit((1 << width) - 1).cast("long"))
    return v


def near_pairs(
    reps: DataFrame,
    records: DataFrame,
    opts: Options,
    skip_old: bool,
    persist: Callable[[DataFrame], DataFrame],
    bounds: Tuple[int, int],
) -> Tuple[DataFrame, Dict[str, Any], Any]:
    """Stages 2 and 3: every pair of representatives (`reps`, as `exact_tier` gives them)
    within `max_distance` bits whose exact Jaccard is at least `min_jaccard`, their sets
    read from `records`.

    Candidates come from the pigeonhole principle: k + 1 disjoint blocks of the fingerprint,
    rows shuffled on (block, value), pairs found inside each group (the library's all-pairs
    join or a pair-by-pair scan) and each reported only by the lowest block the two agree
    on, so no global distinct is needed. A group over `max_bucket` is cut into tiles and
    compared tile pair by tile pair. With `skip_old`, pairs of two records of the previous
    run (decided then) are not scored. `bounds`: upper bounds on the new and the old
    representatives, which `verify="tiles"` counts its tiles from.

    `verify="groups"` verifies each pair in its group, where the two sets meet, in two
    rounds: narrow block rows (fingerprint and set length) find the records that have a
    candidate the sizes allow in a group (`neardup.block_participants`); then only those
    records' rows, joined to their sets, are shuffled again and verified. The participants
    are persisted (with `persist`) and counted first: where none, the second round is not
    run, and where they are fewer than the session's broadcast threshold, Spark's planner
    broadcasts them from the cached relation's size, so the sets are read in place instead
    of shuffled to the join (1-1.5 s of the bench's 5). On real man pages
    at k = 16 a record has such candidates in 3 of its 17 groups, so the sets move about 4
    times instead of 17; a join of pairs to sets (`verify="join"`) moves two per candidate
    (30 a record there, after the size filter).

    Returns (pairs `a`, `b`, `distance`, `jaccard`, the skew report, an accumulator that
    counts the candidates once the pairs are computed: with `verify="groups"`, the pairs
    within k whose set sizes allow `min_jaccard`, the only ones compared; with "join",
    every pair within k)."""
    bits, k, cap = opts.bits, opts.max_distance, opts.max_bucket
    spark = reps.sparkSession
    old = ["old"] if skip_old else []
    sets = records.select("doc", "fp", "fp_hi", "set", *old)
    counted = spark.sparkContext.accumulator(0)
    if opts.verify == "tiles":
        pairs, skew = _tile_pairs(reps, sets, opts, counted, bounds)
        pairs = pairs.select("a", "b", F.lit("simhash+jaccard").alias("rule"), "distance", "jaccard")
        return pairs, skew, counted

    sizes = block_rows(reps.select("fp", "fp_hi"), bits, k).groupBy("block", "value").count()
    # The five largest groups of two or more (which alone make pairs): a top-k in each
    # partition, then of those (a window over every group instead sorted them all in one
    # task: 2.1 s against 0.7 on the bench's 60k records). Only when the fifth is over the
    # cap can more be: then a second pass lists every group over it.
    by_size = [F.desc("count"), "block", "value"]
    largest = sizes.filter(F.col("count") > 1).orderBy(*by_size).limit(5).collect()
    if len(largest) == 5 and largest[-1]["count"] > cap:
        big = sizes.filter(F.col("count") > cap).orderBy(*by_size).collect()
    else:
        big = [r for r in largest if r["count"] > cap]
    skew: Dict[str, Any] = {
        "search": "blocks",
        "blocks": k + 1,
        "max_bucket": cap,
        "largest_buckets": [
            {"block": r["block"], "value": r["value"], "size": r["count"]} for r in largest
        ],
        "split_buckets": [
            {"block": r["block"], "value": r["value"], "size": r["count"], "tiles": math.ceil(r["count"] / cap)}
            for r in sorted(big, key=lambda r: -r["count"])
        ],
    }
    tiles = None
    if big:
        tiles = spark.createDataFrame(
            [(r["block"], r["value"], math.ceil(r["count"] / cap)) for r in big],
            "block int, value long, tiles int",
        )

    def partitions_of(rows: DataFrame, schema: T.StructType, run, count: bool) -> DataFrame:
        """`rows` (block rows) tiled, shuffled into their groups, and each partition's
        groups searched at once by `run(table)` in Rust (no sort of wide rows by group),
        its candidates counted where `count`."""

        grouped = _tiled(rows, tiles).repartition("block", "value", "ta", "tb")
        return _searched(grouped, schema, run, counted if count else None)

    if opts.verify == "groups":
        t = opts.min_jaccard

        def participants(table):
            import neardup

            return neardup.block_participants(table, bits=bits, k=k, min_jaccard=t)

        def verified(table):
            import neardup

            return neardup.block_pairs(table, bits=bits, k=k, min_jaccard=t)

        narrow = block_rows(reps.select("doc", "fp", "fp_hi", "size", *old), bits, k)
        # A record in several tiles of a group is named once per partition those tile
        # pairs land in: distinct rows make it one row of its group again.
        needed = persist(partitions_of(narrow, PARTICIPANTS, participants, count=True).distinct())
        if needed.count() == 0:
            pairs = spark.createDataFrame([], VERIFIED)
        else:
            # `needed` names representatives only, so the join takes no copy's set.
            wide = needed.join(sets, "doc")
            wide = wide.select("block", "value", "doc", "fp", "fp_hi", "set", *old)
            pairs = partitions_of(wide, VERIFIED, verified, count=False)
    else:

        def found(table):
            import neardup

            return neardup.block_pairs(table, bits=bits, k=k)

        narrow = block_rows(reps.select("doc", "fp", "fp_hi"), bits, k)
        pairs = _verified_by_join(partitions_of(narrow, CANDIDATES, found, count=True), sets, opts, skip_old)
    pairs = pairs.select("a", "b", F.lit("simhash+jaccard").alias("rule"), "distance", "jaccard")
    return pairs, skew, counted


def coarse_blocks(bits: int, k: int) -> bool:
    """Whether the `k + 1` pigeonhole blocks of `bits`-bit fingerprints are so narrow that
    their groups compare more pairs than comparing every pair once: a block of `w` bits
    puts a pair of random fingerprints in one group with chance 2^-w, so the groups of all
    blocks compare the sum of that over the blocks times every pair (more on real
    fingerprints, which cluster). At 64 bits that is 0.2 at k = 10, 0.8 at k = 14 and 1.3
    at k = 16; at 128 bits, 1.4 at k = 28."""
    count = k + 1
    share = sum(2.0 ** -((j + 1) * bits // count - j * bits // count) for j in range(count))
    return share >= COARSE


#: From this share of every pair compared (see `coarse_blocks`), `verify="auto"` compares
#: every pair once in tiles instead of the pigeonhole groups. Measured on the bench's 60k
#: real records: see docs/performance.md.
COARSE = 0.5


def tile_count(records: int, cap: int, parallelism: int) -> int:
    """How many tiles `records` are cut into for `verify="tiles"`: two for each of the
    cluster's task slots (`parallelism`), no tile of fewer than `MIN_TILE` records unless
    one tile holds them all, and none over `cap`."""
    tiles = 1
    while tiles < 2 * parallelism and records // (tiles + 1) >= MIN_TILE:
        tiles += 1
    return max(tiles, math.ceil(records / cap))


#: The fewest records a tile is cut to for parallelism alone: below it, a task's own cost
#: outweighs what another slot would save.
MIN_TILE = 2_000


def _murmur3(value: int, seed: int = 42) -> int:
    """Spark's `hash` of an int (Murmur3 x86 32-bit, seed 42), which places a row of
    `repartition(n, column)` in partition `hash % n`."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = rotl((value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def partition_keys(n: int) -> List[int]:
    """For each of `n` partitions, an int that `repartition(n, column)` sends there: one
    tile pair a task, where hashing the pair's own number would put two in some partitions
    and leave others empty."""
    keys: List[Optional[int]] = [None] * n
    left, key = n, 0
    while left:
        at = _murmur3(key) % n
        if keys[at] is None:
            keys[at] = key
            left -= 1
        key += 1
    return [int(k) for k in keys if k is not None]


def _order() -> "F.Column":
    """A record's place in set-size order: its set's length, ties broken by its document
    id's hash, so that a length many records share is still cut into tiles of equal
    counts."""
    return F.col("size").cast("long") * (1 << 32) + F.xxhash64("doc").bitwiseAND(F.lit(0xFFFFFFFF))

#: The sizes' slack: a tile pair is formed, and a row sent to it, wherever the sizes allow
#: the threshold with this much to spare (the scan's own test has 1e-9), so no pair is lost
#: to rounding.
_SLACK = 1e-6

#: Larger than any set's length: the upper end of the last tile.
_UNBOUNDED = 1 << 40


@dataclass
class _Tiles:
    """Tiles of one side (new or old records) in set-size order: `bounds` the order values
    (`_order`) that start tiles 1 .. n - 1, `lo` and `hi` each tile's smallest and largest
    possible set length."""

    bounds: List[int]

    @property
    def count(self) -> int:
        return len(self.bounds) + 1

    @cached_property
    def lo(self) -> List[int]:
        return [0] + [b >> 32 for b in self.bounds]

    @cached_property
    def hi(self) -> List[int]:
        return [(b - 1) >> 32 for b in self.bounds] + [_UNBOUNDED]


def _tiles_of(quantiles: Optional[List[int]]) -> _Tiles:
    return _Tiles(sorted(set(int(q) for q in quantiles or [])))


def _meet(a_lo: int, a_hi: int, b_lo: int, b_hi: int, t: float) -> bool:
    """Whether some set length in [a_lo, a_hi] and some in [b_lo, b_hi] allow `t`."""
    slack = t * (1 - _SLACK)
    return a_hi >= slack * b_lo and b_hi >= slack * a_lo


#: A representative's place in the tile pairs (`_Router.route`): one row per tile pair.
ROUTES = T.StructType(
    [
        T.StructField("doc", T.LongType()),
        T.StructField("ta", T.IntegerType()),
        T.StructField("tb", T.IntegerType()),
        T.StructField("side", T.ByteType()),
        T.StructField("key", T.LongType()),
    ]
)


class _Router:
    """Sends representatives to their tile pairs, a batch of narrow rows (`doc`, `size`,
    `old`, `order`: `_order`) at a time, in the executors: a row's tile is where its order
    falls among its side's bounds, and it goes to every tile
    whose lengths its own can meet (a range of the new tiles; for a new row, of the old
    ones too). Rows: `doc`, `ta`, `tb` (the pair, lower tile first), `side` (0 where the
    row's tile is the lower, 1 the higher, -1 in a tile with itself) and `key` (the pair's
    partition key: `keys[i]` for the pair numbered `numbers[i]`, ta * tiles + tb)."""

    def __init__(self, new: _Tiles, old: Optional[_Tiles], t: float, numbers: List[int], keys: List[int]):
        self.new, self.old, self.t = new, old, t
        self.n = new.count
        self.total = new.count + (old.count if old else 0)
        order = sorted(range(len(numbers)), key=lambda i: numbers[i])
        self.numbers = [numbers[i] for i in order]
        self.keys = [keys[i] for i in order]

    def route(self, batch):
        import numpy as np
        import pyarrow as pa

        def arr(values):
            return np.asarray(values, dtype=np.int64)

        size = batch.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
        old = batch.column("old").to_numpy(zero_copy_only=False).astype(bool)
        doc = batch.column("doc").to_numpy(zero_copy_only=False)
        order = batch.column("order").to_numpy(zero_copy_only=False)
        low = size * (self.t * (1 - _SLACK))
        high = size / (self.t * (1 - _SLACK))

        def reach(tiles: _Tiles, offset: int):
            # Tile lengths ascend: the tiles whose largest length is at least t * size and
            # whose smallest is at most size / t.
            first = np.searchsorted(arr(tiles.hi), low, side="left")
            last = np.searchsorted(arr(tiles.lo), high, side="right") - 1
            return first + offset, last + offset

        tile = np.searchsorted(arr(self.new.bounds), order, side="right")
        first, last = reach(self.new, 0)
        spans = [(first, last)]
        if self.old is not None:
            tile = np.where(old, self.n + np.searchsorted(arr(self.old.bounds), order, side="right"), tile)
            old_first, old_last = reach(self.old, self.n)
            # Old rows meet new tiles only.
            spans.append((old_first, np.where(old, old_first - 1, old_last)))
        names = ["doc", "ta", "tb", "side", "key"]
        types = [pa.int64(), pa.int32(), pa.int32(), pa.int8(), pa.int64()]
        if len(doc) == 0:
            return pa.RecordBatch.from_pylist([], schema=pa.schema(list(zip(names, types))))
        rows, others = [], []
        for first, last in spans:
            count = np.maximum(last - first + 1, 0)
            at = np.repeat(np.arange(len(doc)), count)
            starts = np.repeat(first - np.concatenate(([0], np.cumsum(count)[:-1])), count)
            rows.append(at)
            others.append(np.arange(len(at)) + starts)
        at = np.concatenate(rows)
        other = np.concatenate(others)
        own = tile[at]
        ta, tb = np.minimum(own, other), np.maximum(own, other)
        side = np.where(own < other, 0, np.where(own > other, 1, -1)).astype(np.int8)
        number = ta.astype(np.int64) * self.total + tb
        # Every pair a row reaches is one of the tile pairs (the tiles' lengths meet where a
        # row's do); a key is a function of the pair's number either way.
        at_pair = np.minimum(np.searchsorted(arr(self.numbers), number), len(self.numbers) - 1)
        key = arr(self.keys)[at_pair]
        columns = [doc[at], ta, tb, side, key]
        return pa.RecordBatch.from_arrays(
            [pa.array(c, type=ty) for c, ty in zip(columns, types)], names=names
        )


def _tile_pairs(
    reps: DataFrame, sets: DataFrame, opts: Options, counted: Any, bounds: Tuple[int, int]
) -> Tuple[DataFrame, Dict[str, Any]]:
    """`verify="tiles"`: the representatives cut into tiles in set-size order and every pair
    compared once, in the tile pair that holds it, where both sets are (one round). Right
    where the pigeonhole groups are coarse (`coarse_blocks`): they would compare more pairs
    than this, after shuffling k + 1 narrow rows a record.

    Only pairs whose set sizes allow `min_jaccard` are ever compared, so only tiles whose
    lengths can meet make a tile pair, and a row goes only to the tile pairs whose other
    tile holds lengths its own can meet: its own tile and those beside it. Tiles are cut at
    quantiles of the set length (ties by document id), so each holds about as many
    records. Within a task the rows are scanned in size order, each only against the rows
    whose sizes it allows.

    Records of a previous run (`old`) are tiled apart from the new ones, and no tile pair
    holds two old tiles: their pairs were decided by that run, so an incremental run
    compares the new records with each other and with the old ones, never the old ones
    with each other. Returns the verified pairs and the report's `skew` (the tiles; no
    tile is over the cap by more than the quantiles' 1%)."""
    spark = reps.sparkSession
    cap, t = opts.max_bucket, opts.min_jaccard
    # The tiles are counted from upper bounds on each side's representatives (`bounds`),
    # so that one pass counts both sides and cuts them at the quantiles of the order: no
    # tile is over the cap either way, and at worst a side whose records collapse onto
    # far fewer representatives is cut finer than it needs.
    new_bound, old_bound = bounds
    new_count = tile_count(new_bound, cap, spark.sparkContext.defaultParallelism)
    old_count = math.ceil(old_bound / cap)
    aggs = [F.count(F.when(~F.col("old"), 1)).alias("new"), F.count(F.when(F.col("old"), 1)).alias("old")]
    for is_old, count in ((False, new_count), (True, old_count)):
        if count > 1:
            share = F.array(*[F.lit(i / count) for i in range(1, count)])
            on_side = F.when(F.col("old") == F.lit(is_old), _order())
            # Ranks within 1% of a tile's records.
            aggs.append(F.percentile_approx(on_side, share, max(10_000, 100 * count)).alias(str(is_old)))
    seen = reps.agg(*aggs).first().asDict()
    new_records, old_records = int(seen["new"]), int(seen["old"])
    new = _tiles_of(seen.get("False"))
    # Without a new record, the old ones meet nothing.
    old = _tiles_of(seen.get("True")) if old_count and new_records else None
    n, o = new.count, (old.count if old else 0)
    # Tiles 0 .. n - 1 hold new records, n .. n + o - 1 old ones. The pairs: new tiles that
    # can meet (and each with itself), then each new tile with each old one it can meet.
    pairs = [
        (i, j) for i in range(n) for j in range(i, n) if _meet(new.lo[i], new.hi[i], new.lo[j], new.hi[j], t)
    ]
    if old:
        pairs += [(i, n + j) for i in range(n) for j in range(o) if _meet(new.lo[i], new.hi[i], old.lo[j], old.hi[j], t)]
    total = n + o
    bits, k = opts.bits, opts.max_distance
    # Each tile pair in a partition of its own where there are few enough of them; else
    # the pair's number, and many tasks even out by themselves.
    numbers = [a * total + b for a, b in pairs]
    keys = partition_keys(len(pairs)) if len(pairs) <= PLACED_PAIRS else numbers
    router = _Router(new, old, t, numbers, keys)

    def route(batches):
        for batch in batches:
            yield router.route(batch)

    # Each representative's tile pairs, worked out over narrow rows in the executors
    # (binary searches over the tiles' bounds), then joined to its set: the
    # representatives are few beside the records' sets, so the planner broadcasts them
    # (it knows their cached size) and reads the sets in place.
    narrow = reps.select("doc", "size", "old", _order().alias("order"))
    if not old:
        # No new record to meet them (or no previous run).
        narrow = narrow.filter(~F.col("old"))
    # A task a core: the routing is a few binary searches a row, less than a Python
    # task's own cost on the exact tier's many small partitions.
    routes = narrow.coalesce(spark.sparkContext.defaultParallelism).mapInArrow(executor(route), ROUTES)
    rows = routes.join(sets, "doc").select(
        F.lit(0).alias("block"),
        F.lit(0).cast("long").alias("value"),
        "ta",
        "tb",
        "side",
        "key",
        *sets.columns,
    )

    def verified(table):
        import neardup

        return neardup.block_pairs(table, bits=bits, k=k, min_jaccard=t, whole=True)

    found = _searched(rows.repartition(max(len(pairs), 1), "key"), VERIFIED, verified, counted)
    skew = {
        "search": "tiles",
        "tiles": total,
        "old_tiles": o,
        "tile_pairs": len(pairs),
        "records": new_records + old_records,
        "blocks": opts.max_distance + 1,
        "max_bucket": cap,
        "largest_buckets": [],
        "split_buckets": [],
    }
    return found, skew


#: Up to this many tile pairs, each is sent to a partition of its own (`partition_keys`).
PLACED_PAIRS = 4096


def _searched(rows: DataFrame, schema: T.StructType, run, counted: Any = None) -> DataFrame:
    """Each partition of `rows` (block rows, shuffled into their groups or tile pairs)
    searched at once by `run(table)` in Rust (no sort of wide rows by group), its
    candidates added to the accumulator `counted` where given."""

    def each(batches):
        import pyarrow as pa

        batches = [b for b in batches if b.num_rows]
        if batches:
            out = run(pa.Table.from_batches(batches))
            if counted is not None:
                counted.add(int(out.schema.metadata[b"candidates"]))
            yield out

    return rows.mapInArrow(executor(each), schema)


#: What `neardup.block_participants` returns: the records a group's verification needs.
PARTICIPANTS = T.StructType(
    [
        T.StructField("block", T.IntegerType()),
        T.StructField("value", T.LongType()),
        T.StructField("doc", T.LongType()),
    ]
)


def _tiled(blocks: DataFrame, tiles: Optional[DataFrame]) -> DataFrame:
    """Block rows with their tile pair (`ta`, `tb`) and `side`: a group over the cap
    (`tiles`: `block`, `value`, `tiles`) is cut into tiles by document id, and each row goes
    to every tile pair of its tile; other groups are one tile (0, 0, side -1)."""
    if tiles is not None:
        blocks = blocks.join(F.broadcast(tiles), ["block", "value"], "left")
    else:
        blocks = blocks.withColumn("tiles", F.lit(None).cast("int"))
    tiles_col = F.coalesce(F.col("tiles"), F.lit(1))
    columns = [c for c in blocks.columns if c not in ("block", "value", "tiles")]
    tile = F.pmod(F.xxhash64("doc"), tiles_col).cast("int")
    return (
        blocks.withColumn("tile", tile)
        .withColumn("other", F.explode(F.sequence(F.lit(0), tiles_col - 1)))
        .withColumn("ta", F.least("tile", "other"))
        .withColumn("tb", F.greatest("tile", "other"))
        .withColumn(
            "side",
            F.when(F.col("tile") < F.col("other"), 0)
            .when(F.col("tile") > F.col("other"), 1)
            .otherwise(-1)
            .cast("byte"),
        )
        .select("block", "value", "ta", "tb", "side", *columns)
    )


def _verified_by_join(candidates: DataFrame, sets: DataFrame, opts: Options, skip_old: bool) -> DataFrame:
    """`verify="join"`: candidate pairs (found over narrow block rows) joined to both records'
    sets and scored in the executors. The shuffle is two sets per candidate instead of
    k + 1 per record: the cheaper one where candidates are rare (small k, many records)."""

    def side(name: str) -> DataFrame:
        cols = [F.col("doc").alias(name), F.col("set").alias(name + "_set")]
        if skip_old:
            cols.append(F.col("old").alias(name + "_old"))
        # Never broadcast: the sets are the corpus's bulk, whatever a cached size says.
        return sets.select(*cols).hint("merge")

    joined = candidates.join(side("a"), "a").join(side("b"), "b")
    if skip_old:
        joined = joined.filter(~(F.col("a_old") & F.col("b_old")))
    joined = joined.select("a", "b", "distance", "a_set", "b_set")

    def score(batches):
        import pyarrow as pa

        import neardup

        for batch in batches:
            jaccard = neardup.jaccard_batch(batch)
            yield pa.RecordBatch.from_arrays(
                [batch.column("a"), batch.column("b"), batch.column("distance"), jaccard],
                names=["a", "b", "distance", "jaccard"],
            )

    scored = joined.mapInArrow(executor(score), VERIFIED)
    return scored.filter(F.col("jaccard") >= F.lit(opts.min_jaccard))
