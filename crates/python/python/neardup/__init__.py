"""neardup: near-duplicate text at scale (weighted SimHash, an exact Hamming index, Jaccard
verification), with the same fingerprints and decisions as the `neardup` command.

The engine is the compiled `neardup._neardup` module; `neardup.spark` runs the same dedup on
Apache Spark (it needs `pyspark`, which this package does not install)."""

from ._neardup import (
    BoilerplateLearner,
    Deduper,
    Fingerprinter,
    HammingIndex,
    NeardupError,
    ProfileMismatch,
    __version__,
    analyze_batch,
    annotate_json,
    block_pairs,
    block_participants,
    components,
    default_min_jaccard,
    doc_id,
    fingerprint,
    jaccard,
    jaccard_batch,
    pigeonhole_blocks,
    shingle_hashes,
    with_hosts,
)

__all__ = [
    "BoilerplateLearner",
    "Deduper",
    "Fingerprinter",
    "HammingIndex",
    "NeardupError",
    "ProfileMismatch",
    "__version__",
    "analyze_batch",
    "annotate_json",
    "block_pairs",
    "block_participants",
    "components",
    "default_min_jaccard",
    "doc_id",
    "fingerprint",
    "jaccard",
    "jaccard_batch",
    "pigeonhole_blocks",
    "shingle_hashes",
    "with_hosts",
]
