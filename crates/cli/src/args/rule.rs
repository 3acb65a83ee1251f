//! The near-duplicate rule: `RuleArgs`, its thresholds and the names its options take.

use clap::{Args, ValueEnum};

use super::size::parse_cache_size;
use super::{FeaturesName, ProfileArgs};

/// Thresholds of the near-duplicate rule, and the memory its verification may use.
#[derive(Debug, Args, Clone)]
pub struct RuleArgs {
    /// SimHash candidates are stored records within this many bits (of 64). The default is
    /// measured: pairs with Jaccard >= 0.8 sit up to 9..14 bits apart on real pages.
    #[arg(long, value_name = "BITS", default_value_t = neardup::pipeline::DEFAULT_MAX_DISTANCE)]
    pub max_distance: u32,
    /// A candidate is a near-duplicate when the Jaccard similarity of the shingle sets is at
    /// least this. Default: 0.8; 0.7 with --features code, whose rewritten copies (renamed,
    /// reordered, statements inserted) keep fewer of their syntax-tree shingles.
    #[arg(long, value_name = "J")]
    pub min_jaccard: Option<f64>,
    /// A record joins a cluster only if its Jaccard with every member is at least this (and
    /// at least --min-jaccard with the one it matched and with --cluster-quorum of them):
    /// stops chains of near-duplicates from putting dissimilar records together. 0 (with
    /// --cluster-quorum 0) joins on the best match alone.
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_MIN_CLUSTER_JACCARD)]
    pub min_cluster_jaccard: f64,
    /// A record joins a cluster only if it verifies (--min-jaccard) against at least this
    /// share of the members, copies counted (clusters fuse when this share of their pairs
    /// across verifies): 1 is complete linkage at --min-jaccard, 0 leaves it to
    /// --min-cluster-jaccard. The default, with --min-cluster-jaccard 0.74, is measured on
    /// both quality benches.
    #[arg(long, value_name = "SHARE", default_value_t = neardup::pipeline::DEFAULT_CLUSTER_QUORUM)]
    pub cluster_quorum: f64,
    /// How verified pairs make clusters: `single` joins a record to its best verified match
    /// and fuses every cluster it verified against (connected components, as MinHash LSH
    /// pipelines do: every verified pair is found, and a chain A~B~C puts A and C together
    /// however unlike they are; the report counts such pairs); `guarded` joins only where
    /// --min-cluster-jaccard and --cluster-quorum hold (no chains, some verified pairs kept
    /// apart).
    #[arg(long, value_enum, default_value_t = LinkageName::from(neardup::pipeline::DEFAULT_LINKAGE))]
    pub linkage: LinkageName,
    /// With --linkage single: a join or a fusion that would put two records under this
    /// Jaccard in one cluster is refused, so a chain of near-duplicates stops before it
    /// holds a pair that is no duplicate at all. 0 makes clusters the pure connected
    /// components (nothing measured; the input's order then changes no cluster).
    #[arg(long, value_name = "J", default_value_t = neardup::pipeline::DEFAULT_CHAIN_FLOOR)]
    pub chain_floor: f64,
    /// At most this many nearest candidates (by distance) are verified per record: the
    /// bound on a record's work beside a large group of near copies. Every pair the cap
    /// leaves out is one more pair of a group already found; raise it to verify every
    /// candidate, as the Spark job does.
    #[arg(long, value_name = "N", default_value_t = neardup::pipeline::DEFAULT_MAX_CANDIDATES as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_candidates: u32,
    /// Records with fewer words are short: word SimHash of a handful of words is unstable.
    #[arg(long, value_name = "WORDS", default_value_t = neardup::pipeline::DEFAULT_MIN_WORDS)]
    pub min_words: usize,
    /// Short records: `chars` compares character n-grams (measured: F1 0.98 on light edits
    /// of real short texts), `exact` only exact normalised text (F1 0.31).
    #[arg(long, value_enum, default_value_t = ShortTextName::Chars)]
    pub short_text: ShortTextName,
    /// Characters per n-gram for short records.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub short_ngram: usize,
    /// Candidate radius in bits for short records.
    #[arg(long, value_name = "BITS", default_value_t = 16)]
    pub short_max_distance: u32,
    /// Jaccard threshold over character n-grams for short records.
    #[arg(long, value_name = "J", default_value_t = 0.7)]
    pub short_min_jaccard: f64,
    /// Memory for verification sets read back from the store, kept for the next candidate
    /// that needs them (a cluster's members are checked by every record that joins it).
    /// 0 keeps none.
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_cache_size)]
    pub set_cache: u64,
}

impl RuleArgs {
    /// The library rule, for records read as `profile` says (its features choose the
    /// default --min-jaccard).
    pub fn rule(&self, profile: &ProfileArgs) -> neardup::Rule {
        let short_text = match self.short_text {
            ShortTextName::Exact => neardup::pipeline::ShortText::ExactOnly,
            ShortTextName::Chars => neardup::pipeline::ShortText::CharNgrams {
                width: self.short_ngram,
                max_distance: self.short_max_distance,
                min_jaccard: self.short_min_jaccard,
            },
        };
        neardup::Rule {
            max_distance: self.max_distance,
            min_jaccard: self.min_jaccard.unwrap_or(match profile.features {
                FeaturesName::Code => neardup::pipeline::DEFAULT_CODE_MIN_JACCARD,
                FeaturesName::Words => neardup::pipeline::DEFAULT_MIN_JACCARD,
            }),
            min_words: self.min_words,
            max_candidates: self.max_candidates as usize,
            min_cluster_jaccard: self.min_cluster_jaccard,
            cluster_quorum: self.cluster_quorum,
            short_text,
            chain_floor: self.chain_floor,
            linkage: match self.linkage {
                LinkageName::Single => neardup::pipeline::Linkage::Single,
                LinkageName::Guarded => neardup::pipeline::Linkage::Guarded,
            },
            semantic: None,
        }
    }
}

/// Linkages (see [`neardup::pipeline::Linkage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkageName {
    /// Connected components of verified pairs.
    Single,
    /// Joins only where --min-cluster-jaccard and --cluster-quorum hold.
    Guarded,
}

impl From<neardup::pipeline::Linkage> for LinkageName {
    fn from(l: neardup::pipeline::Linkage) -> Self {
        match l {
            neardup::pipeline::Linkage::Single => LinkageName::Single,
            neardup::pipeline::Linkage::Guarded => LinkageName::Guarded,
        }
    }
}

/// Short-text policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShortTextName {
    /// Exact normalised comparison only.
    Exact,
    /// Character n-gram SimHash and Jaccard.
    Chars,
}
