//! `neardup idf`: document frequencies of shingles over a corpus, for IDF weighting.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use neardup::{IdfTable, SimHasher};

use crate::args::InputArgs;
use crate::input;

/// Arguments of `neardup idf`.
#[derive(Debug, Args)]
pub struct IdfArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write the table.
    #[arg(long, short, value_name = "FILE")]
    pub out: PathBuf,
    /// Words per shingle: must match the --shingle-width the table will be used with.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub shingle_width: usize,
}

pub fn run(args: &IdfArgs) -> anyhow::Result<ExitCode> {
    let input_args = args.input.resolved()?;
    let hasher = SimHasher::builder()
        .shingle_width(args.shingle_width)
        .build()?;
    let mut builder = IdfTable::builder();
    let mut failures = 0u64;
    input::print_skipped_note(&input_args);
    input::for_each(&input_args, |item| {
        match item {
            Ok(record) => {
                let shingles = record
                    .fields
                    .iter()
                    .flat_map(|(_, text)| hasher.shingle_set(text));
                builder.add_document(shingles);
            }
            Err(reject) => {
                failures += 1;
                eprintln!("neardup: {reject}");
            }
        }
        Ok(())
    })?;
    let documents = builder.documents();
    let table = builder.build();
    table
        .save(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "neardup: {} documents, {} distinct shingles -> {}",
        documents,
        table.len(),
        args.out.display()
    );
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::REJECTED)
    })
}
