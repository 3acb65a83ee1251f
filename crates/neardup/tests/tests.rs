//! Integration tests: golden fingerprints and the pipeline as a user drives it.

mod golden;
mod lang;
mod layers;
mod seeds;
mod watch;
