//! The decision policy: thresholds and what a record's arrival resolves to.

use crate::semantic::SemanticRule;
use crate::verify::Scores;
use crate::{Error, Result};

/// Thresholds of the near-duplicate rule (a policy object apart from the mechanics).
///
/// The defaults come from measurement, not from the seeds: on real recrawled pages, pairs
/// with shingle Jaccard >= 0.8 sit up to 9..14 bits apart in a 64-bit SimHash, so k = 3
/// misses about half of them (see the README's "Choosing max_distance").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Candidates come from the index within this many bits.
    pub max_distance: u32,
    /// A candidate is a near-duplicate when the shingle sets' Jaccard is at least this.
    pub min_jaccard: f64,
    /// Records with fewer words get only the exact tier (seeds 000 and 004: SimHash of short
    /// text is unstable).
    pub min_words: usize,
    /// At most this many nearest candidates are verified per record.
    pub max_candidates: usize,
    /// A record joins a cluster only if its Jaccard with every member is at least this
    /// (and at least `min_jaccard` with the member it matched): the guard against chaining.
    pub min_cluster_jaccard: f64,
    /// A record joins a cluster only if it verifies (Jaccard >= `min_jaccard`) against at
    /// least this share of the members, copies counted (0: `min_cluster_jaccard` alone
    /// decides; 1: complete linkage at `min_jaccard`).
    pub cluster_quorum: f64,
    /// What records under `min_words` get beyond the exact tier.
    pub short_text: ShortText,
    /// How verified pairs make clusters.
    pub linkage: Linkage,
    /// Under single linkage, a join or a fusion that would put two records whose Jaccard is
    /// under this in one cluster is refused (the record tries its next match's cluster):
    /// chains stop where they would hold a pair that is no duplicate at all. 0: pure
    /// connected components, nothing measured.
    pub chain_floor: f64,
    /// The semantic stage (seed 002, 5.2), off by default: a record that joins no cluster
    /// by Jaccard joins its best candidate's within the semantic radius whose combined
    /// score (SimHash similarity and the embeddings' cosine) reaches the threshold. Needs
    /// an embedder ([`DeduperBuilder::semantic`](super::DeduperBuilder::semantic)).
    pub semantic: Option<SemanticRule>,
}

/// How verified pairs make clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    /// Connected components of verified pairs, as MinHash LSH pipelines build them: a record
    /// joins the cluster of its best verified match, and every other cluster it verified
    /// against is fused with it. Every verified pair ends up in one cluster and the input's
    /// order changes none, except where [`Rule::chain_floor`] cuts a chain A~B~C whose
    /// ends are under it (a run reports the pairs of its clusters that fall under 0.5).
    Single,
    /// A record joins a cluster only if its Jaccard with every member is at least
    /// [`Rule::min_cluster_jaccard`] and it verifies against [`Rule::cluster_quorum`] of
    /// them; clusters fuse under the same test. No chain puts dissimilar records together,
    /// at the price of verified pairs kept apart.
    Guarded,
}

impl Linkage {
    /// The name the CLI and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Linkage::Single => "single",
            Linkage::Guarded => "guarded",
        }
    }
}

/// The policy for records under [`Rule::min_words`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShortText {
    /// Exact normalised comparison only (seeds 000 and 004: SimHash of a handful of words is
    /// unstable).
    ExactOnly,
    /// SimHash over character n-grams with its own thresholds (seed 002), in an index of
    /// their own.
    CharNgrams {
        /// Characters per n-gram.
        width: usize,
        /// Candidates within this many bits.
        max_distance: u32,
        /// Near-duplicate when the n-gram sets' Jaccard is at least this.
        min_jaccard: f64,
    },
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            max_distance: DEFAULT_MAX_DISTANCE,
            min_jaccard: DEFAULT_MIN_JACCARD,
            min_words: DEFAULT_MIN_WORDS,
            max_candidates: DEFAULT_MAX_CANDIDATES,
            min_cluster_jaccard: DEFAULT_MIN_CLUSTER_JACCARD,
            cluster_quorum: DEFAULT_CLUSTER_QUORUM,
            short_text: DEFAULT_SHORT_TEXT,
            linkage: DEFAULT_LINKAGE,
            chain_floor: DEFAULT_CHAIN_FLOOR,
            semantic: None,
        }
    }
}

/// Default radius in bits (64-bit fingerprints). Chosen with the linkage, the short-text
/// rule and boilerplate over six real corpora (`scripts/bench_quality_corpora.sh`: a docs
/// recrawl, template-heavy pages, edited Chinese, short texts, heavy site chrome, edited man
/// pages) as the setting whose worst corpus is best: with single linkage and no short-text
/// path, the worst corpus F1 reads 0.997 at k 16, 0.990 at 14 and 0.972 at 12 (pairs with
/// J >= 0.8 sit up to 17 bits apart on the man-page bench; k 12 reaches 99.0% of them).
pub const DEFAULT_MAX_DISTANCE: u32 = 16;
/// Default cap on the candidates verified per record, nearest first: beside a group of
/// hundreds of near copies, a record verifies 64 of them and the group is found all the same.
pub const DEFAULT_MAX_CANDIDATES: usize = 64;
/// Default Jaccard threshold: the quality target counts pairs from 0.8.
pub const DEFAULT_MIN_JACCARD: f64 = 0.8;
/// Default Jaccard threshold in code mode ([`TokenRule::Code`](crate::text::TokenRule)),
/// over normalised AST features. Chosen over plagiarism-style rewrites of real code in seven
/// languages (`scripts/code_rule.py` on `code_eval --dump`): the highest threshold whose
/// worst language keeps recall >= 0.95 at precision >= 0.99. At 0.8 Java's rewrites (short
/// methods, each with an inserted statement) reached 0.883; at 0.7 the worst language is
/// Java at 0.960, precision 1.000 in all seven. The cost, on pip's vendored libraries
/// against their originals: 114 false matches against 94 (files of one shape, such as
/// chardet's frequency tables, which code mode sees as one tree).
pub const DEFAULT_CODE_MIN_JACCARD: f64 = 0.7;

/// The default Jaccard threshold for records read with `tokens`:
/// [`DEFAULT_CODE_MIN_JACCARD`] in code mode, else [`DEFAULT_MIN_JACCARD`].
pub fn default_min_jaccard(tokens: crate::text::TokenRule) -> f64 {
    use crate::text::TokenRule;
    match tokens {
        TokenRule::Code(_) | TokenRule::CodeAuto => DEFAULT_CODE_MIN_JACCARD,
        _ => DEFAULT_MIN_JACCARD,
    }
}
/// The guarded linkage's floor ([`Linkage::Guarded`], not the default linkage): a record
/// joins a cluster when its Jaccard with every member is at least 0.74 and at least 0.8
/// (`min_jaccard`) with three quarters of them. Measured, with a metric that counted
/// co-clustered pairs of J 0.5..0.8 as false (the multi-corpus harness ignores them), on
/// both quality benches (`scripts/bench_quality.sh` with seeds 7 to 13 and
/// `scripts/bench_dedup.sh`): joining on the best match alone (single linkage) reaches
/// recall 0.995 at precision 0.95-0.98, because chains put pairs of J 0.6..0.8 in one
/// cluster; complete linkage at 0.8 gives precision 1.0 at recall 0.90-0.95; complete
/// linkage at 0.77 (the default until this quorum) sat on both edges at once, precision
/// 0.9816-0.9933 and recall 0.927-0.967 over the eight corpora. With the quorum, every
/// corpus reads precision 0.9911-0.9982 and recall 0.954-0.971: a record that verifies
/// against most of a large cluster joins it despite one or two members just under 0.8,
/// while in clusters of up to three, where one such member is a third of the pairs the
/// join makes, complete linkage at 0.8 decides. The floor is the narrow part: 0.72 let a
/// corpus's precision fall to 0.9899, 0.75 another's recall to 0.947.
pub const DEFAULT_MIN_CLUSTER_JACCARD: f64 = 0.74;
/// Default share of a cluster's members (copies counted) a record must verify against to
/// join it (see [`DEFAULT_MIN_CLUSTER_JACCARD`]).
pub const DEFAULT_CLUSTER_QUORUM: f64 = 0.75;
/// Default linkage: connected components of the verified pairs. Over the six corpora of
/// `scripts/bench_quality_corpora.sh` it beats guarded linkage on every one (template-heavy
/// pages: F1 0.999 against 0.925 at k 16) without losing precision (worst 0.993), and the
/// input's order changes no cluster.
pub const DEFAULT_LINKAGE: Linkage = Linkage::Single;
/// Default chain floor of single linkage ([`Rule::chain_floor`]): 0.5, where pairs stop
/// being near-duplicates of any degree (the multi-corpus bench scores a co-clustered pair
/// under 0.5 as false). Over its six corpora it changed no figure against pure connected
/// components, at the same speed; it is the cap on chains they could not show.
pub const DEFAULT_CHAIN_FLOOR: f64 = 0.5;
/// Default minimum length for SimHash, in words: 1, so every record is fingerprinted and
/// verified over its word shingles, whatever its length. The exact verification makes a
/// short text's unstable SimHash cost recall only, and on real short texts (fortunes,
/// package descriptions, man page titles, 40% edited) no short-text rule did better: F1
/// 0.997, against 0.830 for the exact tier alone under 50 words and 0.747-0.774 for
/// character 3-grams, which merged different titles and template pages whose words differ
/// (precision 0.60-0.64).
pub const DEFAULT_MIN_WORDS: usize = 1;
/// The short-text policy for records under `min_words`, when that is raised: character
/// 3-grams within 16 bits and Jaccard >= 0.7 (with the default `min_words` of 1, no record
/// is short). On Debian's fortunes and Tang/Song poems with light edits, scored on
/// character n-grams (`scripts/bench_short_text.sh`), F1 0.983 and 0.984 against 0.31 and
/// 0.38 for the exact tier alone; scored on word shingles, it merges records whose words
/// differ (see [`DEFAULT_MIN_WORDS`]).
pub const DEFAULT_SHORT_TEXT: ShortText = ShortText::CharNgrams {
    width: 3,
    max_distance: 16,
    min_jaccard: 0.7,
};

impl Rule {
    /// Checks the thresholds.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a Jaccard threshold outside 0..=1, a radius above 32 bits
    /// or a candidate cap of 0.
    pub fn validate(&self) -> Result<()> {
        within_0_1("min_jaccard", self.min_jaccard, "must be between 0 and 1")?;
        within_0_1("chain_floor", self.chain_floor, "must be between 0 and 1")?;
        if self.max_distance > 32 {
            return Err(Error::InvalidConfig {
                field: "max_distance",
                value: self.max_distance.to_string(),
                reason: "at most 32 bits: beyond that a 64-bit SimHash no longer separates related from unrelated text".into(),
            });
        }
        if let ShortText::CharNgrams {
            width,
            max_distance,
            min_jaccard,
        } = self.short_text
        {
            if !(1..=16).contains(&width)
                || max_distance > 32
                || !(0.0..=1.0).contains(&min_jaccard)
            {
                return Err(Error::InvalidConfig {
                    field: "short_text",
                    value: format!("{:?}", self.short_text),
                    reason: "n-gram width 1..=16, max_distance <= 32, min_jaccard in 0..=1".into(),
                });
            }
        }
        within_0_1(
            "min_cluster_jaccard",
            self.min_cluster_jaccard,
            "must be between 0 and 1",
        )?;
        within_0_1(
            "cluster_quorum",
            self.cluster_quorum,
            "must be a share between 0 and 1",
        )?;
        if let Some(s) = &self.semantic {
            s.validate()?;
        }
        if self.max_candidates == 0 {
            return Err(Error::InvalidConfig {
                field: "max_candidates",
                value: "0".into(),
                reason: "at least one candidate must be verified".into(),
            });
        }
        Ok(())
    }

    /// Whether verified scores make a near-duplicate under this rule's Jaccard test.
    pub fn accepts(&self, scores: Scores) -> bool {
        scores.distance <= self.max_distance && scores.jaccard >= self.min_jaccard
    }

    /// Whether scores pass this rule's Jaccard test or its semantic rule (with a cosine),
    /// for fingerprints of `bits`.
    pub fn accepts_any(&self, scores: Scores, bits: u32) -> bool {
        self.accepts(scores)
            || self
                .semantic
                .is_some_and(|s| s.accepts(scores.distance, bits, scores.cosine))
    }

    /// The radius the index answers: `max_distance`, or the semantic stage's when wider.
    pub fn index_radius(&self) -> u32 {
        self.semantic
            .map_or(self.max_distance, |s| s.radius.max(self.max_distance))
    }
}

/// [`Error::InvalidConfig`] for `field` unless its `value` is within 0..=1 (NaN is not).
fn within_0_1(field: &'static str, value: f64, reason: &str) -> Result<()> {
    if !(0.0..=1.0).contains(&value) || value.is_nan() {
        return Err(Error::InvalidConfig {
            field,
            value: value.to_string(),
            reason: reason.into(),
        });
    }
    Ok(())
}

/// How a merge was justified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MergeRule {
    /// Identical normalised text (content hash).
    Exact,
    /// Within `max_distance` bits and Jaccard at least `min_jaccard`.
    SimhashJaccard,
    /// A short record: character n-gram SimHash and Jaccard within the short-text thresholds.
    CharsJaccard,
    /// Within the semantic radius, and the combined score of SimHash similarity and the
    /// embeddings' cosine at least the semantic threshold.
    SimhashSemantic,
}

impl MergeRule {
    /// The name written to the merge log.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeRule::Exact => "exact",
            MergeRule::SimhashJaccard => "simhash+jaccard",
            MergeRule::CharsJaccard => "chars+jaccard",
            MergeRule::SimhashSemantic => "simhash+semantic",
        }
    }
}

/// What happened to one arriving record.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// It is the survivor of its cluster (a new cluster, or it displaced the survivor).
    Kept {
        /// Whether it was too short for SimHash (exact tier only).
        too_short: bool,
        /// The record whose cluster it joined and displaced, if any.
        displaced: Option<String>,
        /// The rule and scores of that join, if any.
        joined: Option<(MergeRule, Scores, String)>,
    },
    /// It was merged into a cluster.
    Merged {
        /// The cluster's survivor.
        survivor: String,
        /// The record it was verified against.
        matched: String,
        /// The rule.
        rule: MergeRule,
        /// Both scores.
        scores: Scores,
    },
    /// It was processed by an earlier run with the same content; nothing changed.
    AlreadyStored {
        /// Its cluster's survivor now (itself when kept).
        survivor: String,
    },
    /// It could not be used.
    Rejected {
        /// Why.
        reason: String,
    },
}
