"""neardup: near-duplicate text at scale (weighted SimHash, an exact Hamming index, Jaccard
verification), with the same fingerprints and decisions as the `neardup` command."""

from os import PathLike
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__version__: str

Texts = Union[Sequence[str], Iterable[str], pa.Array, pa.ChunkedArray]
Hashes = Union[npt.NDArray[np.uint64], Sequence[int]]

class NeardupError(Exception):
    """An error of the neardup engine (a store that failed, an index refusal)."""

class ProfileMismatch(NeardupError):
    """Fingerprints, or a store, made with another fingerprint profile."""

class Fingerprinter:
    """A fingerprint configuration, reusable across calls (the options of `neardup dedup`)."""

    def __init__(
        self,
        *,
        profile: str = "xxh3",
        shingle: int = 4,
        bits: int = 64,
        weighting: str = "tf",
        tokens: str = "words",
        stopwords: bool = False,
        idf: Optional[Union[str, PathLike[str]]] = None,
        synonyms: Optional[Union[str, PathLike[str]]] = None,
        threads: Optional[int] = None,
    ) -> None: ...
    @property
    def profile(self) -> str:
        """The profile as the CLI prints it, e.g. ``neardup/4/xxh3/w4/b64/tf``."""
    @property
    def bits(self) -> int: ...
    def fingerprint(self, texts: Texts) -> npt.NDArray[np.uint64]:
        """uint64 fingerprints: shape (n,) for 64 bits, (n, 2) (high, low) for 128."""
    def shingle_hashes(self, text: str) -> npt.NDArray[np.uint64]:
        """The distinct shingle hashes of `text`, sorted."""

def fingerprint(
    texts: Texts,
    *,
    profile: str = "xxh3",
    shingle: int = 4,
    bits: int = 64,
    weighting: str = "tf",
    tokens: str = "words",
    stopwords: bool = False,
    idf: Optional[Union[str, PathLike[str]]] = None,
    synonyms: Optional[Union[str, PathLike[str]]] = None,
    threads: Optional[int] = None,
) -> npt.NDArray[np.uint64]:
    """Fingerprints of `texts`, as `neardup fingerprint` makes them."""

def shingle_hashes(
    text: str, *, profile: str = "xxh3", shingle: int = 4, tokens: str = "words"
) -> npt.NDArray[np.uint64]:
    """The distinct shingle hashes of `text`, sorted: the sets neardup verifies with."""

def jaccard(a: Union[str, Hashes], b: Union[str, Hashes], *, shingle: int = 4) -> float:
    """Exact Jaccard similarity of two texts' shingle sets, or of two sets of hashes."""

class HammingIndex:
    """Every stored 64-bit fingerprint within k bits, exactly."""

    def __init__(self, k: int = 3, expected: int = 1_000_000) -> None: ...
    @property
    def k(self) -> int: ...
    @property
    def layout(self) -> str: ...
    def __len__(self) -> int: ...
    def add(self, ids: Hashes, fingerprints: Hashes) -> None: ...
    def query(
        self, fingerprints: Hashes, k: Optional[int] = None
    ) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """(query position, id, distance) of every stored fingerprint within k bits."""
    def all_pairs(
        self, k: Optional[int] = None
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """(id a, id b, distance) of every stored pair within k bits."""

def default_min_jaccard(tokens: str = "words") -> float:
    """The default Jaccard threshold for `tokens`: 0.8, or 0.7 for source code."""

class Deduper:
    """`neardup dedup`'s decisions against a store (an SQLite file, or memory)."""

    def __init__(
        self,
        store: Optional[Union[str, PathLike[str]]] = None,
        *,
        max_distance: int = 16,
        min_jaccard: Optional[float] = None,
        min_words: int = 1,
        linkage: str = "single",
        chain_floor: float = 0.5,
        min_cluster_jaccard: float = 0.74,
        cluster_quorum: float = 0.75,
        short_text: str = "chars",
        boilerplate: bool = False,
        boilerplate_share: float = 0.05,
        boilerplate_min_pages: int = 20,
        boilerplate_min_count: int = 10,
        profile: str = "xxh3",
        shingle: int = 4,
        bits: int = 64,
        weighting: str = "tf",
        tokens: str = "words",
        stopwords: bool = False,
        idf: Optional[Union[str, PathLike[str]]] = None,
        synonyms: Optional[Union[str, PathLike[str]]] = None,
        detect_language: bool = True,
        threads: Optional[int] = None,
    ) -> None: ...
    def process(
        self,
        records: Union[Iterable[Mapping[str, Any]], pa.Table, pa.RecordBatch, Any],
        *,
        id: str = "id",
        text: Optional[Union[str, Sequence[str]]] = None,
        url: str = "url",
        first_seen: str = "first_seen",
        strict: bool = False,
    ) -> pa.Table:
        """One row per record: position, id, decision, survivor, matched, rule, distance,
        jaccard, reason."""
    def query(self, text: str, k: Optional[int] = None) -> list[Tuple[str, int, float]]: ...
    def erase(self, ids: Sequence[str]) -> list[str]: ...
    def clusters(self) -> list[dict[str, Any]]: ...
    def merges(self) -> list[dict[str, Any]]: ...
    @property
    def profile(self) -> str: ...
    @property
    def min_jaccard(self) -> float: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Deduper": ...
    def __exit__(self, *exc: Any) -> bool: ...

# Arrow batch kernels of the Spark job (`neardup.spark`): each takes and returns Arrow data.

def analyze_batch(
    batch: pa.RecordBatch,
    *,
    json: Optional[str] = None,
    id: str = "id",
    text: Union[str, Sequence[str], None] = None,
    url: str = "url",
    first_seen: str = "first_seen",
    now_ms: int,
    profile: str = "xxh3",
    shingle: int = 4,
    bits: int = 64,
    weighting: str = "tf",
    tokens: str = "words",
    stopwords: bool = False,
    idf: Optional[Union[str, PathLike]] = None,
    synonyms: Optional[Union[str, PathLike]] = None,
    detect_language: bool = True,
    boilerplate: Optional[bytes] = None,
    threads: Optional[int] = None,
) -> pa.RecordBatch: ...
def doc_id(id: str) -> int: ...
def with_hosts(
    batch: pa.RecordBatch, *, json: Optional[str] = None, id: str = "id", url: str = "url"
) -> pa.RecordBatch: ...

class BoilerplateLearner:
    def __init__(
        self,
        *,
        share: float = 0.05,
        min_pages: int = 20,
        min_count: int = 10,
        sample_pages: int = 1000,
        json: Optional[str] = None,
        id: str = "id",
        text: Union[str, Sequence[str], None] = None,
        url: str = "url",
        first_seen: str = "first_seen",
        threads: Optional[int] = None,
        profile: str = "xxh3",
        shingle: int = 4,
        bits: int = 64,
        weighting: str = "tf",
        tokens: str = "words",
        stopwords: bool = False,
        idf: Optional[Union[str, PathLike]] = None,
        synonyms: Optional[Union[str, PathLike]] = None,
    ) -> None: ...
    def add(self, batch: pa.RecordBatch) -> None: ...
    def finish(self) -> pa.RecordBatch: ...
def annotate_json(
    lines: pa.Array,
    source_urls: pa.Array,
    first_seen: pa.Array,
    cluster_size: pa.Array,
    fingerprint: pa.Array,
    language: pa.Array,
) -> pa.Array: ...
def pigeonhole_blocks(batch: pa.RecordBatch, *, bits: int, k: int) -> pa.RecordBatch: ...
def block_pairs(
    rows: Union[pa.Table, pa.RecordBatch],
    *,
    bits: int,
    k: int,
    min_jaccard: Optional[float] = None,
    join_from: int = 131072,
) -> pa.RecordBatch:
    """Pairs within k bits among pigeonhole_blocks rows, group by group (lowest agreeing
    block only; tiles where the rows carry ta, tb, side); with min_jaccard, verified against
    the rows' sets and returned with `jaccard` (only pairs whose set sizes allow
    min_jaccard are compared). Schema metadata `candidates`: pairs found (with min_jaccard,
    those the sizes allow).
    Groups of `join_from` rows or more are searched by the all-pairs join (at 128 bits, of
    each half at k // 2) instead of a scan per row."""
def block_participants(
    rows: Union[pa.Table, pa.RecordBatch],
    *,
    bits: int,
    k: int,
    min_jaccard: float,
    join_from: int = 131072,
) -> pa.RecordBatch:
    """Over block rows carrying `size` (a set's length in ids) instead of the set: `block`,
    `value`, `doc` of each record a group's verification needs (a candidate the sizes allow,
    in its lowest agreeing block's group). Schema metadata `candidates`: pairs found that
    the sizes allow."""
def components(a: pa.Array, b: pa.Array) -> pa.RecordBatch:
    """Connected components of the edges a[i] ~ b[i] (int64): `doc`, `root` (the smallest
    doc of its component), one row per node."""
def jaccard_batch(batch: pa.RecordBatch, *, a: str = "a_set", b: str = "b_set") -> pa.Array: ...
