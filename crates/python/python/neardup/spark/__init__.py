"""neardup on Apache Spark: the same dedup as `neardup dedup`, for corpora no single machine
holds.

    from neardup.spark import dedup
    result = dedup(spark.read.parquet("crawl/"), id="id", text="body_text")
    result.write("out/", format="parquet")

or from a shell, on a local master or any master `spark-submit` gives:

    python -m neardup.spark dedup --input crawl.jsonl --output out/
    spark-submit --master 'local[2]' "$(python -m neardup.spark script)" \
        dedup --input crawl.jsonl --output out/

`session()` starts the session the command line runs in: a local master by default, with
a few shuffle partitions per core, half the machine's memory and the JVM's client compiler
(settings spark-submit or spark-defaults.conf give win).

Each stage runs in the executors on the Rust core through Arrow batches (`mapInArrow`,
`applyInArrow`), never row by row in Python:

1. analysis: normalise, shingle, fingerprint, the exact tier's content hash and the
   verification set, beside each record's own columns; a stable 64-bit document id from the
   record's id (`neardup.doc_id`), so two runs of one input give the same clusters and
   survivors however Spark partitions it;
2. the exact tier: records of one content hash collapse onto one representative;
3. candidates: k + 1 pigeonhole blocks of the fingerprint, rows shuffled on (block, value),
   the pairs within k bits found inside each group and reported by their lowest agreeing
   block only; a group over `max_bucket` is tiled and reported in the report's `skew`.
   Where the blocks are narrow (k over about a fifth of the bits, as at the default 64-bit
   k = 16), their groups would compare more pairs than all pairs once: the records are cut
   into tiles instead and every tile pair compared once (`verify="tiles"`, which
   `verify="auto"` picks);
4. exact Jaccard verification of every candidate pair where both sets are: in its group
   (the records a group's verification needs are named over narrow rows first, then only
   theirs move with their sets) or in its tile pair; only pairs whose set sizes allow the
   threshold are compared;
5. clusters: connected components of the verified pairs (large-star / small-star, or a
   union-find on the driver where the pairs are few enough to collect), the CLI's
   `--linkage single --chain-floor 0`;
6. survivors: the earliest first seen, ties to the smallest id, every source URL kept (on
   the driver where the clustered records are few, by aggregations on the cluster else).

The outputs are the CLI's, with one difference in the merge log: the CLI logs each merge as
it happens, naming the survivor of that moment, where this job names each merged record's
final survivor and its best verified match (an exact copy, then the highest Jaccard).
Clusters, survivors, fingerprints and Jaccard scores are the CLI's under `--chain-floor 0
--max-candidates N` with N above any record's candidates (the CLI verifies the 64 nearest by
default; the job verifies every candidate).

`boilerplate=True` (the CLI's `--boilerplate`) first learns each host's boilerplate: records
shuffled by their URL's host and counted there by the library's learner; the union is
broadcast and left out of every record's analysis. `previous=` deduplicates a new batch
against an earlier run's `state` (tomorrow's crawl against today's), with the boilerplate
that run wrote beside it. Needs `pyspark` (4.0 or later) and Java 17; the package does not install
them.
"""

from ._job import AccountingError, Result, dedup, neardup_time
from ._options import DEFAULT_TEXT_FIELDS, Options
from ._session import session

__all__ = ["AccountingError", "DEFAULT_TEXT_FIELDS", "Options", "Result", "dedup", "neardup_time", "session"]
