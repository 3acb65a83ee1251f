"""Stage 4: clusters as the connected components of the verified pairs, by the alternating
large-star / small-star algorithm (Kiveris et al., "Connected Components in MapReduce and
Beyond", SoCC 2014), the one text-dedup's Spark MinHash uses: O(log n) rounds of two
shuffles each, no node ever holding more than its own neighbours, every component ending as
a star around its smallest document id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Tuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    import pyarrow as pa

#: Rounds after which the job stops with an error rather than loop: each round at least
#: halves a component's diameter in practice (the paper bounds it by O(log^2 n)).
MAX_ROUNDS = 64


def _normalised(edges: DataFrame) -> DataFrame:
    """Undirected edges once each, as (u, v) with u < v."""
    return (
        edges.select(F.least("u", "v").alias("u"), F.greatest("u", "v").alias("v"))
        .filter(F.col("u") != F.col("v"))
        .distinct()
    )


def _large_star(edges: DataFrame) -> DataFrame:
    """Every node links each larger neighbour to the smallest of its closed neighbourhood."""
    both = edges.select(F.col("u").alias("x"), F.col("v").alias("y")).unionByName(
        edges.select(F.col("v").alias("x"), F.col("u").alias("y"))
    )
    smallest = both.groupBy("x").agg(F.least(F.min("y"), F.col("x")).alias("m"))
    out = both.join(smallest, "x").filter(F.col("y") > F.col("x"))
    return _normalised(out.select(F.col("y").alias("u"), F.col("m").alias("v")))


def _small_star(edges: DataFrame) -> DataFrame:
    """Every node links itself and its smaller neighbours to the smallest of them."""
    smallest = edges.groupBy("v").agg(F.min("u").alias("m"))
    out = edges.join(smallest, "v")
    linked = out.select(F.col("u"), F.col("m").alias("v")).unionByName(
        smallest.select(F.col("v").alias("u"), F.col("m").alias("v"))
    )
    return _normalised(linked)


def components(pairs: DataFrame) -> Tuple[DataFrame, int]:
    """The component of every node of `pairs` (columns `a`, `b`): rows `doc`, `root` (the
    component's smallest document id; a root maps to itself), and the rounds it took.
    `on_driver` gives the same roots from the pairs collected."""
    edges = _normalised(pairs.select(F.col("a").alias("u"), F.col("b").alias("v")))
    edges = edges.localCheckpoint()
    rounds = 0
    while True:
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
        new = _small_star(_large_star(edges)).localCheckpoint()
        # Converged when a round changes no edge: one pass over both edge sets (each holds
        # every edge once), counting the edges only one of them has.
        old_side = edges.select("u", "v", F.lit(True).alias("in_old"))
        new_side = new.select("u", "v", F.lit(True).alias("in_new"))
        changed = old_side.join(new_side, ["u", "v"], "full_outer").filter(
            F.col("in_old").isNull() | F.col("in_new").isNull()
        )
        if changed.isEmpty():
            break
        edges = new
    # A star around each root: (root, member) edges.
    members = edges.select(F.col("v").alias("doc"), F.col("u").alias("root"))
    roots = edges.select(F.col("u").alias("doc"), F.col("u").alias("root")).distinct()
    return members.unionByName(roots), rounds


def on_driver(pairs: "pa.Table") -> "pa.Table":
    """`components` of the pairs collected (columns `a`, `b`), by a union-find on the
    driver (`neardup.components`): a few seconds of Spark stages saved where the pairs are
    few enough to collect."""
    import pyarrow as pa

    import neardup

    return pa.Table.from_batches([neardup.components(pairs["a"].combine_chunks(), pairs["b"].combine_chunks())])
