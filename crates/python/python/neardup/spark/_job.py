"""The dedup job: stages in order, the survivors, and the outputs `neardup dedup` writes."""

from __future__ import annotations

import array
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import neardup

from . import _components, _stages, _survivors
from ._survivors import _rfc3339
from ._options import Options
from ._worker import executor

PERSIST = StorageLevel.MEMORY_AND_DISK


#: Keyword aliases of the column options: `dedup(df, id_col="key", text_col="body")`.
COLUMN_ALIASES = {"id_col": "id", "text_col": "text", "url_col": "url", "first_seen_col": "first_seen"}


class AccountingError(RuntimeError):
    """The outputs do not account for every input record (kept + merged + rejected)."""


@dataclass
class Result:
    """A run's outputs as DataFrames (lazy, over persisted stages) and its report."""

    #: Kept records: the input's columns (or its JSON lines, with `json`) with
    #: `source_urls`, `first_seen`, `cluster_size`, `neardup_fingerprint` and
    #: `neardup_language`.
    kept: DataFrame
    #: Clusters of more than one record: `cluster`, `survivor`, `first_seen`, `members`,
    #: `source_urls`, `size`.
    clusters: DataFrame
    #: One entry per merged record (and per survivor of a previous run displaced by an
    #: earlier record): `kept`, `merged`, `merged_fingerprint`, `rule`, `distance`,
    #: `jaccard`, `matched`, `source_urls`, `displaced`, `at`.
    merges: DataFrame
    #: Records that could not be used: `id`, `reason` (and `input`, with `json`).
    rejects: DataFrame
    #: Every verified pair: `a`, `b` (ids), `rule`, `distance`, `jaccard`.
    pairs: DataFrame
    #: Every record's fingerprint, set and cluster, for the next run's `previous`.
    state: DataFrame
    report: Dict[str, Any]
    #: Each host's boilerplate (`host`, `pages`, `shingles`: 8-byte hashes), learned by
    #: this run and by the previous one, which the next run's `previous` applies; None
    #: where neither learned any.
    boilerplate: Optional[DataFrame] = None
    json: Optional[str] = None
    timings: Dict[str, float] = field(default_factory=dict)
    #: The stages the outputs are computed from, persisted until `unpersist`.
    persisted: List[DataFrame] = field(default_factory=list, repr=False)

    def unpersist(self) -> None:
        """Releases the persisted stages (executor memory and disk). The outputs stay
        readable, recomputed from the input when read again. A session that runs many
        jobs calls this (or uses the result as a context manager) when done with one."""
        for df in self.persisted:
            df.unpersist()
        self.persisted.clear()

    def __enter__(self) -> "Result":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unpersist()

    def write(self, out: str, format: str = "parquet", pairs: bool = False) -> None:
        """Writes kept, clusters, merges, rejects (and pairs) as `format` ("parquet" or
        "jsonl") directories under `out`, the state as Parquet, and report.json. The rows
        written are counted as they are written and checked against the report's counts
        (AccountingError where they differ)."""
        if format not in ("parquet", "jsonl"):
            raise ValueError(f"format {format!r}: \"parquet\" or \"jsonl\"")
        started = time.monotonic()
        outputs = {
            "kept": self.kept,
            "clusters": self.clusters,
            "merges": self.merges,
            "rejects": self.rejects,
        }
        if pairs:
            outputs["pairs"] = self.pairs
        written = {name: Observation(f"neardup_{name}") for name in outputs}

        def write_one(name: str) -> None:
            path = os.path.join(out, name)
            df = outputs[name].observe(written[name], F.count(F.lit(1)).alias("rows"))
            if format == "parquet":
                df.write.mode("overwrite").parquet(path)
            elif name == "kept" and self.json is not None:
                df.select(F.col(self.json).alias("value")).write.mode("overwrite").text(path)
            else:
                df.write.mode("overwrite").json(path, ignoreNullFields=True)

        # The state (and the boilerplate) for the next run, always Parquet.
        tables = {"state": self.state}
        if self.boilerplate is not None:
            tables[BOILERPLATE] = self.boilerplate

        def write_table(name: str) -> None:
            tables[name].write.mode("overwrite").parquet(os.path.join(out, name))

        # Each output is a job of its own: submitted together, the small ones (merges,
        # rejects, clusters) run in the slots the large ones leave free instead of one after
        # another, each with its own scheduling.
        with ThreadPoolExecutor(max_workers=len(outputs) + len(tables)) as pool:
            jobs = [pool.submit(write_one, name) for name in outputs]
            jobs += [pool.submit(write_table, name) for name in tables]
            for job in jobs:
                job.result()
        rows = {name: int(obs.get["rows"]) for name, obs in written.items()}
        wrote = {
            "kept": rows["kept"],
            "merged": rows["merges"] - self.report.get("displaced_survivors", 0),
            "rejected": rows["rejects"],
        }
        expected = {name: self.report.get(name) for name in wrote}
        if self.report and wrote != expected:
            raise AccountingError(f"the outputs written hold {wrote}, the run counted {expected}")
        self.timings["write"] = round(time.monotonic() - started, 3)
        report = dict(self.report, timings_seconds=self.timings)
        _write_text(self.kept.sparkSession, os.path.join(out, "report.json"), json.dumps(report, indent=2, sort_keys=True))


def _write_text(spark: SparkSession, path: str, text: str) -> None:
    if "://" not in path or path.startswith("file://"):
        local = path[len("file://"):] if path.startswith("file://") else path
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        with open(local, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        spark.createDataFrame([(text,)], "value string").coalesce(1).write.mode("overwrite").text(path)


#: Where a run writes its boilerplate: beside its state, which a later run's `previous` names.
BOILERPLATE = "boilerplate"


def boilerplate_beside(spark: SparkSession, state: str) -> List[Any]:
    """The boilerplate a previous run wrote beside its `state` (rows of `host`, `pages`,
    `shingles`), or none."""
    from pyspark.errors import AnalysisException

    path = os.path.join(os.path.dirname(state.rstrip("/")), BOILERPLATE)
    try:
        return spark.read.schema(_stages.LEARNED).parquet(path).collect()
    except AnalysisException:
        return []


def _hashes(shingles: bytes) -> "array.array":
    out = array.array("Q", shingles)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def _bytes(hashes) -> bytes:
    out = array.array("Q", sorted(hashes))
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


def merged_boilerplate(learned: List[Any], previous: List[Any]) -> List[Tuple[str, int, bytes]]:
    """Each host's boilerplate: this run's learned set unioned with the previous run's for
    the same host (pages added), as the CLI merges a store's with a run's; hosts only one
    of them has keep theirs. Sorted by host."""
    hosts: Dict[str, Tuple[int, set]] = {}
    for row in list(previous) + list(learned):
        pages, shingles = hosts.get(row["host"], (0, set()))
        shingles.update(_hashes(row["shingles"]))
        hosts[row["host"]] = (pages + row["pages"], shingles)
    return [(host, pages, _bytes(shingles)) for host, (pages, shingles) in sorted(hosts.items())]


def read_state(spark: SparkSession, path: str, opts: Options) -> DataFrame:
    """A previous run's state, refused when its profile is not this run's."""
    state = spark.read.parquet(path)
    profiles = [r["profile"] for r in state.select("profile").distinct().limit(2).collect()]
    if profiles and profiles != [opts.profile_string]:
        raise neardup.ProfileMismatch(
            f"the previous run's state {path} was made with profile {profiles[0]}, "
            f"this run's is {opts.profile_string}: fingerprints of two profiles cannot be compared"
        )
    return state


def dedup(
    df: DataFrame,
    *,
    json: Optional[str] = None,
    previous: Optional[str] = None,
    now: Optional[datetime] = None,
    options: Optional[Options] = None,
    **kwargs: Any,
) -> Result:
    """Deduplicates `df` (see the package's docstring). With `json=COLUMN`, each row's
    COLUMN is one JSON line, checked field by field as the CLI checks one. With
    `previous=PATH` (a previous run's `state`), records are deduplicated against it too."""
    if options is not None and kwargs:
        raise TypeError("pass options=Options(...) or keyword options, not both")
    for alias, name in COLUMN_ALIASES.items():
        if alias in kwargs:
            if name in kwargs:
                raise TypeError(f"{alias} and {name} name one option: pass one")
            kwargs[name] = kwargs.pop(alias)
    opts = options if options is not None else Options(**kwargs)
    spark = df.sparkSession
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    now = now or datetime.now(timezone.utc)
    now_ms = int(now.timestamp() * 1000)
    timings: Dict[str, float] = {}
    clock = [time.monotonic()]

    def lap(name: str) -> None:
        t = time.monotonic()
        timings[name] = round(t - clock[0], 3)
        clock[0] = t

    persisted: List[DataFrame] = []

    def persist(stage: DataFrame) -> DataFrame:
        stage = stage.persist(PERSIST)
        persisted.append(stage)
        return stage

    try:
        if json is not None:
            df = df.filter(F.trim(F.col(json)) != "")
        learned = _stages.learn_boilerplate(df, opts, json).collect() if opts.boilerplate else []
        hosts = merged_boilerplate(learned, boilerplate_beside(spark, previous) if previous else [])
        furniture = None
        if hosts:
            union = set()
            for _, _, shingles in hosts:
                union.update(_hashes(shingles))
            furniture = spark.sparkContext.broadcast(_bytes(union))
        lap("boilerplate")
        source = _stages.located(df, opts, json)
        analysed = persist(_stages.analyze(source, opts, json, now_ms, furniture))
        # One pass builds the cache and counts the records, the usable ones and their
        # distinct document ids: ids repeat only where the last two differ.
        usable = F.col("_nd_reason").isNull()
        seen = analysed.agg(
            F.count(F.lit(1)).alias("records"),
            F.count(F.when(usable, 1)).alias("usable"),
            F.count_distinct(F.when(usable, F.col("_nd_doc"))).alias("docs"),
        ).first()
        input_records = int(seen["records"])
        lap("analysis")

        records, rejects, repeats = _stages.unique_ids(analysed, persist, repeated=seen["usable"] != seen["docs"])
        if repeats is not None:
            rejects = rejects.unionByName(_stages.with_input(repeats, source, json))
        state = None
        fresh = records
        if previous is not None:
            state = read_state(spark, previous, opts)
            stored = state.select(F.col("doc").alias("_nd_doc"), F.col("content").alias("_nd_prev_content"))
            again = records.join(stored, "_nd_doc").withColumn(
                "_nd_reason",
                F.when(
                    F.col("_nd_content") == F.col("_nd_prev_content"),
                    F.concat(F.lit("already stored: "), F.to_json(F.array("_nd_id")), F.lit(" was deduplicated by the previous run with the same text")),
                ).otherwise(
                    F.concat(F.lit("duplicate id with different text: "), F.to_json(F.array("_nd_id")), F.lit(" is already stored with another text (ids must be unique; the stored record is kept as it is)"))
                ),
            ).drop("_nd_prev_content")
            rejects = rejects.unionByName(_stages.with_input(again, source, json))
            fresh = records.join(stored.select("_nd_doc"), "_nd_doc", "left_anti")
        new = fresh.select(*[F.col("_nd_" + c).alias(c) for c in _stages.RECORD]).withColumn("old", F.lit(False))
        if state is not None:
            old = state.select(*_stages.RECORD).withColumn("old", F.lit(True))
            everything = persist(new.unionByName(old))
        else:
            # A projection of persisted records: recomputed where read, never copied.
            everything = new

        reps, exact = _stages.exact_tier(everything, persist)
        # Upper bounds on the representatives of each side, which only the tiles count
        # from: the usable records' distinct ids, and the previous run's records.
        tiled = state is not None and opts.verify == "tiles"
        bounds = (int(seen["docs"]), state.count() if tiled else 0)
        near, skew, candidate_count = _stages.near_pairs(
            reps, everything, opts, skip_old=state is not None, persist=persist, bounds=bounds
        )
        edges = exact.unionByName(near)
        if state is not None:
            earlier = state.filter(F.col("doc") != F.col("root")).select(
                F.col("doc").alias("a"),
                F.col("root").alias("b"),
                F.lit("previous").alias("rule"),
                F.lit(None).cast("int").alias("distance"),
                F.lit(None).cast("double").alias("jaccard"),
            )
            edges = edges.unionByName(earlier)
        edges = persist(edges)
        edge_count = edges.count()
        lap("candidates_and_verification")

        # Few enough pairs to collect: their components on the driver, and, where the
        # pairs and the records they cluster are fewer still, the survivors (the pairs
        # collected with their rules and scores for those).
        local = edge_count <= opts.local_components
        scored = edge_count <= _survivors.LOCAL_SURVIVORS
        collected = (edges if scored else edges.select("a", "b")).toArrow() if local else None
        if collected is not None:
            local_roots = _components.on_driver(collected)
            roots, rounds = spark.createDataFrame(local_roots, _survivors.ROOTS), 0
        else:
            roots, rounds = _components.components(edges)
        lap("components")

        at = neardup_time(now_ms)
        if local and scored and local_roots.num_rows <= _survivors.LOCAL_SURVIVORS:
            # Every usable record is new, but where a previous run stored its id.
            fresh_count = int(seen["docs"]) if state is None else everything.filter(~F.col("old")).count()
            placement = _survivors.on_driver(everything, fresh, fresh_count, collected, roots, state, opts, at)
        else:
            placement = _survivors.on_cluster(everything, fresh, edges, roots, state, opts, at, persist)
        tally = placement.tally
        # The analysis's rejects were counted in its pass; only repeated or stored ids add
        # more. (`write` checks the rows it writes against these counts.)
        rejected = input_records - int(seen["usable"]) if repeats is None and state is None else rejects.count()
        counts = {"kept": tally["kept"], "merged": tally["merged"], "rejected": rejected}
        result = _outputs(opts, json, source, rejects, placement, everything, roots)
        lap("survivors")
        report = {
            "input_records": input_records,
            **counts,
            "clusters": tally["clusters"],
            "displaced_survivors": tally["displaced"],
            "candidate_pairs": candidate_count.value,
            "verified_pairs": edge_count,
            "component_rounds": rounds,
            "components_on": "driver" if collected is not None else "cluster",
            "survivors_on": placement.on,
            "skew": skew,
            "rule": opts.rule(),
            "previous": previous,
            "boilerplate_hosts": [
                {"host": host, "pages_learned_from": pages, "boilerplate_shingles": len(shingles) // 8}
                for host, pages, shingles in hosts
            ],
        }
        balanced = counts["kept"] + counts["merged"] + counts["rejected"] == input_records
        report["accounting_balanced"] = balanced
        result.report = report
        result.timings = timings
        result.persisted = persisted
        if hosts:
            result.boilerplate = spark.createDataFrame(hosts, _stages.LEARNED)
        if not balanced:
            raise AccountingError(
                f"kept {counts['kept']} + merged {counts['merged']} + rejected "
                f"{counts['rejected']} != input {input_records}"
            )
        return result
    except BaseException:
        for stage in persisted:
            stage.unpersist()
        raise


def _outputs(opts, json, source, rejects, placement, everything, roots) -> Result:
    # The kept records' own columns, read again from the input by their rows' positions
    # (a few narrow columns found them): the text never rides through the persisted
    # stages. A row whose columns hash otherwise than on the first read stops the job.
    kept_rows = placement.keep(source).filter(
        F.assert_true(F.col(_stages.CHECK) == F.col("_nd_was"), F.lit(CHANGED)).isNull()
    )
    input_cols = [c for c in source.columns if not c.startswith("_nd_")]
    if json is not None:
        kept = _annotated(kept_rows, json)
    else:
        own = [c for c in input_cols if c not in ("source_urls", "first_seen", "cluster_size", "neardup_fingerprint", "neardup_language")]
        kept = kept_rows.select(
            *own,
            F.col("_nd_source_urls").alias("source_urls"),
            _rfc3339(F.col("_nd_first_ms")).alias("first_seen"),
            F.col("_nd_size").alias("cluster_size"),
            F.col("_nd_hex").alias("neardup_fingerprint"),
            F.col("_nd_language").alias("neardup_language"),
        )

    reject_cols = [F.col("_nd_id").alias("id"), F.col("_nd_reason").alias("reason")]
    if json is not None:
        reject_cols.append(F.col("_nd_input").alias("input"))
    rejected = rejects.select(*reject_cols)

    # Every record's root, from the components' own (doc, root) rows: small beside the
    # records (only records with an edge have a row), so the records are not shuffled to a
    # join with every member.
    state_out = (
        everything.select(*_stages.RECORD)
        .join(roots, "doc", "left")
        .withColumn("root", F.coalesce(F.col("root"), F.col("doc")))
        .withColumn("profile", F.lit(opts.profile_string))
    )
    return Result(
        kept=kept,
        clusters=placement.clusters,
        merges=placement.merges,
        rejects=rejected,
        pairs=placement.pairs,
        state=state_out,
        report={},
        json=json,
    )


#: The kept output's error where a row of the input is not what the analysis read.
CHANGED = (
    "the input changed between the job's two reads of it (the analysis, then the kept "
    "records' own columns): persist or checkpoint a DataFrame that is not deterministic "
    "before passing it to dedup"
)


def neardup_time(ms: int) -> str:
    """Milliseconds as RFC 3339 in UTC, as the CLI writes them."""
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    if ms % 1000 == 0:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _annotated(kept_rows: DataFrame, json: str) -> DataFrame:
    """Kept JSON lines with the CLI's fields set (`neardup.annotate_json`, in the executors)."""
    cols = kept_rows.select(
        F.col(json).alias("line"),
        F.col("_nd_source_urls").alias("urls"),
        F.col("_nd_first_ms").alias("first"),
        F.col("_nd_size").alias("size"),
        F.col("_nd_hex").alias("hex"),
        F.col("_nd_language").alias("language"),
    )

    def run(batches):
        import pyarrow as pa

        import neardup

        for b in batches:
            out = neardup.annotate_json(
                b.column("line"),
                b.column("urls"),
                b.column("first"),
                b.column("size"),
                b.column("hex"),
                b.column("language"),
            )
            yield pa.RecordBatch.from_arrays([out], names=[json])

    return cols.mapInArrow(executor(run), T.StructType([T.StructField(json, T.StringType())]))
