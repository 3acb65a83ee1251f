//! The profile and the rule together, for the commands that fingerprint and decide.

use clap::Args;

use super::{ProfileArgs, RuleArgs};

/// How records are fingerprinted and when two are near-duplicates: the options of every
/// command that opens a store's pipeline.
#[derive(Debug, Args, Clone)]
pub struct ScoringArgs {
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub rule: RuleArgs,
}
