"""The job's options: `neardup dedup`'s names and defaults, checked before Spark starts."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

import neardup

#: The text fields read when none are named, whichever a record has (the CLI's default).
DEFAULT_TEXT_FIELDS = ("title", "description", "body_text", "text")


@dataclass(frozen=True)
class Options:
    """What `neardup.spark.dedup` does, with `neardup dedup`'s defaults.

    The linkage is the CLI's `--linkage single --chain-floor 0`: clusters are the connected
    components of the verified pairs. The CLI's default chain floor (0.5) refuses joins in
    input order, which has no meaning on a partitioned input, so it cannot be distributed
    exactly; run the CLI with `--chain-floor 0` for the same clusters as this job.
    Boilerplate learning is the CLI's `--boilerplate` (off by default there too); the
    short-text rule (the CLI's default `--min-words 1` never uses it) is not part of the
    Spark job.
    """

    #: Field (column) holding the record id; ids are unique, as in a store.
    id: str = "id"
    #: Text fields, in order (default: title, description, body_text, text, whichever exist).
    text: Optional[Sequence[str]] = None
    #: Field holding the source URL.
    url: str = "url"
    #: Field holding the first-seen time (RFC 3339 string or timestamp).
    first_seen: str = "first_seen"
    #: Candidates within this many bits.
    max_distance: int = 16
    #: A candidate is a near-duplicate when the shingle sets' Jaccard is at least this.
    #: Default: 0.8, or 0.7 with code tokens (`dedup --features code`'s default).
    min_jaccard: Optional[float] = None
    #: Fingerprint profile (`--profile`, `--shingle-width`, `--bits`, `--weighting`,
    #: `--idf`, `--tokens`, `--stopwords`, `--synonyms`). Source code: `tokens="code-LANG"`
    #: (the CLI's `--features code --code-lang LANG`), or `"code-auto"`: each record read as
    #: the language of its id's file extension, else its URL's.
    profile: str = "xxh3"
    shingle: int = 4
    bits: int = 64
    weighting: str = "tf"
    idf: Optional[str] = None
    tokens: str = "words"
    stopwords: bool = False
    #: A synonyms file (one group a line): every executor reads it, so on a cluster it must
    #: be on a path they all see.
    synonyms: Optional[str] = None
    #: Detect each record's language (`neardup_language` in kept records).
    detect_language: bool = True
    #: Learn each host's boilerplate in a first pass and leave it out of every record's
    #: fingerprint and verification set, wherever the record is from (the CLI's
    #: `--boilerplate`, off by default for the same reason: it costs recall where true
    #: pairs share a template). A host is a record's URL's host. A shingle is boilerplate
    #: when it is on more than `boilerplate_share` of a host's pages and on at least
    #: `boilerplate_min_count` of them, on hosts with at least `boilerplate_min_pages`
    #: pages; `boilerplate_sample_pages` pages of each host are counted (those of the
    #: smallest document ids, where the CLI counts the first in input order), exactly up
    #: to 10 / share pages and by the CLI's lossy counting past that.
    boilerplate: bool = False
    boilerplate_share: float = 0.05
    boilerplate_min_pages: int = 20
    boilerplate_min_count: int = 10
    boilerplate_sample_pages: int = 1000
    #: A pigeonhole group (one block value) larger than this is split into tiles compared
    #: pair by pair, so no task holds more than twice this many fingerprints; such groups
    #: are listed in the report's `skew`. With `verify="tiles"`, no tile holds more (but
    #: for the 1% its quantiles may be off).
    max_bucket: int = 50_000
    #: Where candidate pairs are verified: "groups" (in their group, in two rounds: narrow
    #: block rows name the records each group's verification needs, then only those rows
    #: are shuffled again with their sets: one set per record plus one per group it has
    #: candidates in) or "join" (narrow block rows; candidates joined to both sets: two
    #: sets shuffled per candidate).
    #: Or "tiles": every pair compared once, the records cut into tiles (one round, each
    #: set shuffled once per tile), which compares fewer pairs than the groups where
    #: blocks are narrow (k over about a fifth of the bits). "auto" (the default) picks
    #: "tiles" where the blocks are that narrow, else "groups"; the report's rule names
    #: the one used.
    verify: str = "auto"
    #: Up to this many verified pairs, clusters are made on the driver (the pairs collected,
    #: 16 bytes each), and their survivors too where the pairs and the records they cluster
    #: are at most 1M; above it, by large-star / small-star on the cluster. The same
    #: clusters.
    local_components: int = 5_000_000

    def __post_init__(self) -> None:
        if self.bits not in (64, 128):
            raise ValueError(f"bits {self.bits}: fingerprints have 64 or 128 bits")
        if not 0 <= self.max_distance < self.bits:
            raise ValueError(
                f"max_distance {self.max_distance}: between 0 and {self.bits - 1} bits "
                f"(k + 1 pigeonhole blocks over {self.bits} bits)"
            )
        if self.min_jaccard is None:
            object.__setattr__(self, "min_jaccard", neardup.default_min_jaccard(self.tokens))
        if not 0.0 < self.min_jaccard <= 1.0:
            raise ValueError(f"min_jaccard {self.min_jaccard}: in (0, 1]")
        if self.verify not in ("auto", "groups", "join", "tiles"):
            raise ValueError(f"verify {self.verify!r}: \"auto\", \"groups\", \"join\" or \"tiles\"")
        if self.verify == "auto":
            from ._stages import coarse_blocks

            object.__setattr__(self, "verify", "tiles" if coarse_blocks(self.bits, self.max_distance) else "groups")
        if self.local_components < 0:
            raise ValueError(f"local_components {self.local_components}: at least 0")
        if self.max_bucket < 2:
            raise ValueError(f"max_bucket {self.max_bucket}: at least 2")
        if not 0.0 < self.boilerplate_share < 1.0:
            raise ValueError(f"boilerplate_share {self.boilerplate_share}: above 0 and below 1")
        for name in ("boilerplate_min_pages", "boilerplate_min_count", "boilerplate_sample_pages"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)}: at least 1")
        if isinstance(self.text, str):
            object.__setattr__(self, "text", (self.text,))
        if self.text is not None and len(self.text) == 0:
            raise ValueError("text: at least one field name")
        # The profile's own checks (an unknown weighting, idf without a table, ...).
        self.fingerprinter()

    def _profile_kwargs(self) -> Dict[str, Any]:
        """The fingerprint profile's keyword arguments, as the package's functions take them."""
        return dict(
            profile=self.profile,
            shingle=self.shingle,
            bits=self.bits,
            weighting=self.weighting,
            tokens=self.tokens,
            stopwords=self.stopwords,
            idf=self.idf,
            synonyms=self.synonyms,
        )

    def fingerprinter(self) -> "neardup.Fingerprinter":
        return neardup.Fingerprinter(**self._profile_kwargs())

    @property
    def profile_string(self) -> str:
        """The profile as the CLI prints and stores it, e.g. `neardup/4/xxh3/w4/b64/tf`."""
        return self.fingerprinter().profile

    @property
    def text_fields(self) -> Sequence[str]:
        return tuple(self.text) if self.text is not None else DEFAULT_TEXT_FIELDS

    def analysis_kwargs(self) -> Dict[str, Any]:
        """The keyword arguments of `neardup.analyze_batch` these options give."""
        return dict(
            id=self.id,
            text=list(self.text_fields),
            url=self.url,
            first_seen=self.first_seen,
            detect_language=self.detect_language,
            **self._profile_kwargs(),
        )

    def rule(self) -> Dict[str, Any]:
        """The rule as the report and the state record it."""
        return {
            "profile": self.profile_string,
            "max_distance": self.max_distance,
            "min_jaccard": self.min_jaccard,
            "linkage": "components",
            "max_bucket": self.max_bucket,
            "verify": self.verify,
            "boilerplate": self.boilerplate_learning() if self.boilerplate else False,
        }

    def boilerplate_learning(self) -> Dict[str, Any]:
        """The keyword arguments of `neardup.BoilerplateLearner` these options give (less
        the record's fields)."""
        return dict(
            share=self.boilerplate_share,
            min_pages=self.boilerplate_min_pages,
            min_count=self.boilerplate_min_count,
            sample_pages=self.boilerplate_sample_pages,
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)
