//! Detection-quality evaluation of the dedup pipeline against an exact brute-force Jaccard
//! ground truth, on real text from this machine (plus real-looking edits of it), and the
//! corpus builders of the quality and throughput benches.
//!
//! ```text
//! quality_eval corpus --out DIR [--man-pages 400] [--seed 7]
//!     DIR/corpus.jsonl: every /usr/share/doc/*/copyright, every licence in
//!     /usr/share/common-licenses, --man-pages English man pages rendered with `man -l`,
//!     and deterministic edited versions of a random subset, shuffled; {"id","body_text"}.
//! quality_eval eval --corpus FILE --out DIR [--cli-out DIR]... [--threads N]
//!     Exact Jaccard over the pipeline's 4-word shingle sets for ALL pairs, the Hamming
//!     distance distribution of the pairs with J >= 0.8, and pairwise P/R/F1 of the library
//!     `Deduper` (default rule and a few others) and of `neardup dedup` outputs (--cli-out,
//!     its clusters.jsonl restricted to the corpus' ids). Writes DIR/shingles.jsonl,
//!     DIR/truth.jsonl (every pair with J >= 0.5) and DIR/results.json for the Python peers.
//! quality_eval big-corpus --out FILE --gb 1 [--sample-out FILE --sample-every 128]
//!     The >= 1 GB throughput corpus: all text of /usr/share/doc (gzip included), every man
//!     page of every language rendered with groff, then passes of deterministic variants
//!     (edited near-duplicates, verbatim republications, splices of neighbours) until the
//!     size is reached. --sample-out gets whole families (a base document and all its
//!     variants) for a brute-force labelled sample.
//! ```
//!
//! Nothing here is tuned to the targets: the corpus recipe is fixed before measuring and the
//! pipeline runs with `Rule::default()` (other rules are printed for context only).

mod args;
mod big_corpus;
mod boilerplate;
mod corpus;
mod distance;
mod edits;
mod eval;
mod misses;
mod rng;
mod score;
mod sources;
mod systems;
mod truth;

use args::Args;

pub(crate) type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> AnyResult<()> {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = raw.first() else {
        return Err("usage: quality_eval corpus|eval|big-corpus [--options]".into());
    };
    let args = Args::parse(&raw[1..]);
    if let Some(t) = args.get("threads") {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t.parse()?)
            .build_global()?;
    }
    match cmd.as_str() {
        "corpus" => corpus::cmd_corpus(&args),
        "eval" => eval::cmd_eval(&args),
        "big-corpus" => big_corpus::cmd_big_corpus(&args),
        other => Err(format!("unknown command {other:?}").into()),
    }
}
